"""XG2_JAX_BITMASK: what allocate_token_bitmask returns (numpy by default, torch tensors as
xgrammar's for torch callers). The backend is read at import, so each case runs a fresh
interpreter, outside the repository root (whose xg2_jax/ folder would shadow an install)."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import xg2_jax as xg

# One matcher over a small vocabulary: its masks under the torch backend must be the numpy
# backend's, through every call that fills, resets or applies a bitmask.
TORCH_CALLER = textwrap.dedent("""
    import numpy as np
    import torch
    import xg2_jax as xgr

    assert xgr.BITMASK_BACKEND == "torch" and xgr.bitmask_dtype is torch.int32
    tok = xgr.TokenizerInfo(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    compiled = xgr.GrammarCompiler(tok).compile_grammar(xgr.Grammar.from_ebnf('root ::= "a" "b"*'))
    bitmask = xgr.allocate_token_bitmask(2, tok.vocab_size)
    assert isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32
    assert tuple(bitmask.shape) == xgr.get_bitmask_shape(2, tok.vocab_size)
    assert bool((bitmask == -1).all())

    matchers = [xgr.GrammarMatcher(compiled), xgr.GrammarMatcher(compiled)]
    assert matchers[1].accept_string("a")
    xgr.BatchGrammarMatcher().batch_fill_next_token_bitmask(matchers, bitmask)
    expected = np.full((2, 1), -1, dtype=np.int32)
    for row, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(expected, row)
    assert bitmask.numpy().tolist() == expected.tolist()
    assert xgr.testing.bitmask_to_bool_mask(bitmask, 4).tolist() == [
        [True, False, True, False], [False, True, False, True]]

    logits = torch.zeros((2, 4))
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    assert torch.isinf(logits).tolist() == [[False, True, False, True], [True, False, True, False]]
    host_logits = np.zeros((2, 4), dtype=np.float32)  # numpy logits take a torch bitmask too
    xgr.apply_token_bitmask_inplace(host_logits, bitmask)
    assert np.isinf(host_logits).tolist() == torch.isinf(logits).tolist()

    clone = bitmask.clone()
    xgr.reset_token_bitmask(bitmask)
    assert bool((bitmask == -1).all()) and not torch.equal(clone, bitmask)

    # xg2-jax's own loops keep numpy host buffers, which they hand to JAX.
    from xg2_jax._src.bitmask import allocate_host_bitmask
    assert isinstance(allocate_host_bitmask(1, 4), np.ndarray)
    print("ok")
""")


def run_python(source: str, tmp_path, backend: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, XG2_JAX_BITMASK=backend)
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)


def test_default_backend_is_numpy():
    if os.environ.get("XG2_JAX_BITMASK", "numpy") != "numpy":
        pytest.skip("this process runs with another XG2_JAX_BITMASK")
    assert xg.BITMASK_BACKEND == "numpy"
    mask = xg.allocate_token_bitmask(3, 65)
    assert type(mask).__module__ == "numpy" and mask.dtype == xg.bitmask_dtype
    assert mask.shape == (3, 3) and (mask == -1).all()


def test_torch_backend_is_a_drop_in_for_torch_callers(tmp_path):
    pytest.importorskip("torch")
    proc = run_python(TORCH_CALLER, tmp_path, "torch")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["ok"]


def test_an_unknown_backend_fails_the_import_saying_why(tmp_path):
    proc = run_python("import xg2_jax", tmp_path, "tensorflow")
    assert proc.returncode != 0
    assert "XG2_JAX_BITMASK must be 'numpy' or 'torch'; got 'tensorflow'" in proc.stderr


def test_an_undersized_bitmask_warns_that_the_tail_is_left_unmasked():
    logits = np.ones((2, 70), dtype=np.float32)
    bitmask = np.zeros((2, 2), dtype=np.int32)  # 64 bits < 70 columns
    with pytest.warns(UserWarning, match=r"logits\[\.\.\., 64:\] are left unmasked"):
        xg.apply_token_bitmask_inplace(logits, bitmask)
    assert np.isinf(logits[:, :64]).all() and np.isfinite(logits[:, 64:]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # vocab_size says where the vocabulary ends: no warning
        xg.apply_token_bitmask_inplace(np.ones((2, 70), dtype=np.float32), bitmask, vocab_size=40)
        xg.apply_token_bitmask_inplace(np.ones((2, 64), dtype=np.float32), bitmask)
