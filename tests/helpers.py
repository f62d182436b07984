"""Small helpers shared by several test modules (imported as ``helpers``; pytest puts tests/ on
sys.path)."""

from __future__ import annotations

import numpy as np

import xg2_jax as xg
from xg2_jax import greedy_tokenize


def mask_row(m: xg.GrammarMatcher, vocab_size: int) -> np.ndarray:
    """The next-token bitmask of ``m`` as one int32 row (a copy)."""
    bm = xg.allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm)
    return bm[0].copy()


def allowed_ids(m: xg.GrammarMatcher, vocab_size: int) -> list[int]:
    """The token ids the next-token bitmask of ``m`` allows, ascending."""
    row = mask_row(m, vocab_size)
    return [i for i in range(vocab_size) if (int(row[i // 32]) >> (i % 32)) & 1]


def masks_along(compiled: xg.CompiledGrammar, data: bytes) -> tuple[list[np.ndarray], bool]:
    """The mask row before each byte of ``data`` and after the last (accepted one byte at a
    time), and whether the input may end there."""
    matcher = xg.GrammarMatcher(compiled)
    mask = xg.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    out = []
    for i in range(len(data) + 1):
        matcher.fill_next_token_bitmask(mask)
        out.append(mask[0].copy())
        if i < len(data):
            assert matcher.accept_string(data[i:i + 1]), (data, i)
    return out, matcher.is_completed()


def compile_lark(tok: xg.TokenizerInfo, text: str) -> xg.CompiledGrammar:
    """``text`` as a Lark grammar (with ``tok`` for its token sets), compiled without the cache."""
    grammar = xg.Grammar.from_lark(text, tokenizer_info=tok)
    return xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)


def tokenize(tok: xg.TokenizerInfo, text: str) -> list[int]:
    """Greedy longest-match tokenization of ``text`` (UTF-8) over the non-special tokens."""
    return greedy_tokenize(tok, text.encode())


def vm_rss_mib() -> float:
    """This process's resident set size (VmRSS) in MiB (NaN where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")
