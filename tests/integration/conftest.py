"""The integration suites run third-party engines (vLLM, torch, transformers) whose own
deprecation and resource warnings are not this project's: they are shown, not errors."""


def pytest_configure(config):
    for category in ("DeprecationWarning", "FutureWarning", "UserWarning", "ResourceWarning",
                     "RuntimeWarning", "PendingDeprecationWarning"):
        config.addinivalue_line("filterwarnings", f"default::{category}")
