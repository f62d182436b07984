"""Shared pytest fixtures. Keep additions small and independent of each other."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's shared data folder (``../shared/data``); skips the test when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def _vocab_file(shared_data: Path, name: str) -> Path:
    path = shared_data / "vocab" / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"missing vocabulary file {path}")
    return path


@pytest.fixture(scope="session")
def vocab_path(shared_data):
    """Returns ``f(name)``: the path of ``shared/data/vocab/<name>.json.gz`` (skips if absent)."""
    return lambda name: _vocab_file(shared_data, name)


@pytest.fixture(scope="session")
def gpt2_tokenizer(shared_data):
    """GPT-2 (byte-level BPE, 50,257 tokens) as an ``xg2_jax.TokenizerInfo``."""
    import xg2_jax

    return xg2_jax.TokenizerInfo.from_vocab_file(_vocab_file(shared_data, "gpt2"))


@pytest.fixture(scope="session")
def llama3_tokenizer(shared_data):
    """Llama-3 (byte-level BPE, 128,256 tokens) as an ``xg2_jax.TokenizerInfo``."""
    import xg2_jax

    return xg2_jax.TokenizerInfo.from_vocab_file(_vocab_file(shared_data, "llama3"))


@pytest.fixture(scope="session")
def llama2_tokenizer(shared_data):
    """Llama-2 (SentencePiece with byte fallback, 32,000 tokens) as an
    ``xg2_jax.TokenizerInfo``."""
    import xg2_jax

    return xg2_jax.TokenizerInfo.from_vocab_file(_vocab_file(shared_data, "llama2"))
