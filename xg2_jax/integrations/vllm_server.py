"""vLLM's OpenAI-compatible server with the ``xg2_jax`` backend registered before vLLM parses
its arguments: vLLM checks ``--structured-outputs-config`` against its own backend names
before it loads plugins, so ``python -m vllm.entrypoints.openai.api_server`` refuses
``{"backend": "xg2_jax"}``. Takes the same arguments::

    python -m xg2_jax.integrations.vllm_server --model DIR \\
        --structured-outputs-config '{"backend": "xg2_jax"}'
"""

from __future__ import annotations

import runpy
import sys

__all__ = ["main"]

SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def main() -> None:
    """Registers the backend, then runs vLLM's server module as ``__main__``."""
    import xg2_jax.integrations.vllm  # noqa: F401 - registers the backend name

    sys.argv[0] = SERVER_MODULE
    runpy.run_module(SERVER_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
