"""xgrammar's testing and tokenizer internals that xg2-jax provides by name: nullable rule ids,
the byte-level alphabet, vocabulary-type detection, and the C++-only helpers that say why
they are missing."""

import numpy as np
import pytest

import xg2_jax as xg
from xg2_jax import testing as xgt
from xg2_jax.tokenizer_info import _BYTE_LEVEL_CHARSET


@pytest.mark.parametrize("ebnf, expected", [
    ('root ::= rule1 rule2 | "abc"\nrule1 ::= "abc" | ""\nrule2 ::= "def" rule3 | ""\n'
     'rule3 ::= "ghi"', [0, 1, 2]),
    ('root ::= rule1 rule3\nrule1 ::= "abc" | ""\nrule2 ::= "def" | ""\nrule3 ::= rule1 rule2',
     [0, 1, 2, 3]),
    ('root ::= [a]* [b]* rule1\nrule1 ::= [abc]* [def]*', [0, 1]),
    ('root ::= "x" rule1\nrule1 ::= "a" rule1 | ""', [1]),
    ('root ::= "a"{0,3}', [0]),
    ('root ::= "a"{1,3}', []),
    ('root ::= rule1 "b"\nrule1 ::= rule1 "a" | ""', [1]),
])
def test_allow_empty_rule_ids_are_the_nullable_rules(ebnf, expected):
    compiled = xg.GrammarCompiler(xg.TokenizerInfo([])).compile_grammar(ebnf)
    ids = xgt._get_allow_empty_rule_ids(compiled)
    assert ids == expected
    # The root's membership is the language's: "" is accepted exactly when rule 0 is listed.
    assert xgt._is_grammar_accept_string(ebnf, "") == (0 in ids)


def test_allow_empty_rule_ids_needs_a_compiled_grammar():
    with pytest.raises(xg.InvalidArgumentError, match="CompiledGrammar"):
        xgt._get_allow_empty_rule_ids(xg.Grammar.from_ebnf('root ::= "a"'))


@pytest.mark.parametrize("helper", [
    xgt.GrammarFunctor.structure_normalizer, xgt.GrammarFunctor.rule_inliner,
    xgt.GrammarFunctor.byte_string_fuser, xgt.GrammarFunctor.dead_code_eliminator,
    xgt.GrammarFunctor.lookahead_assertion_analyzer, xgt.GrammarFunctor.grammar_optimizer,
    xgt.GrammarFunctor.fsm_builder, xgt.GrammarFunctor.repetition_normalizer,
    xgt._generate_range_regex, xgt._generate_float_regex, xgt._print_grammar_fsms,
])
def test_cpp_only_helpers_say_why_they_are_missing(helper):
    with pytest.raises(NotImplementedError, match="no counterpart in xg2-jax"):
        helper(xg.Grammar.from_ebnf('root ::= "a"'))


@pytest.mark.parametrize("rule_id, text, accepted", [
    (0, "xab", True), (0, "ab", False), (1, "ab", True), (1, "abab", True), (1, "x", False),
])
def test_rule_fsm_accept_string_matches_the_rules_language(rule_id, text, accepted):
    grammar = xg.Grammar.from_ebnf('root ::= "x" item+\nitem ::= "a" "b" | "ab" "ab"')
    names = [line.split("::=")[0].strip() for line in str(grammar).splitlines() if "::=" in line]
    assert names[0] == "root" and len(names) == 2  # printed order: the ids the helper takes
    assert xgt._is_rule_fsm_accept_string(grammar, rule_id, text) is accepted


def test_rule_fsm_accept_string_refuses_an_unknown_rule():
    with pytest.raises(xg.InvalidArgumentError, match="out of range"):
        xgt._is_rule_fsm_accept_string(xg.Grammar.from_ebnf('root ::= "a"'), 3, "a")


def test_byte_level_charset_is_the_decoders_alphabet():
    assert len(_BYTE_LEVEL_CHARSET) == 256
    chars = sorted(_BYTE_LEVEL_CHARSET)
    # Each character, as a byte-level token, decodes (natively) to one byte; all 256 differ.
    info = xg.TokenizerInfo(chars, xg.VocabType.BYTE_LEVEL)
    decoded = info.decoded_vocab
    assert all(len(b) == 1 for b in decoded)
    assert len(set(decoded)) == 256
    assert decoded[chars.index("\u0120")] == b" " and decoded[chars.index("\u010a")] == b"\n"


_BYTE_FALLBACK_VOCAB = {f"<0x{b:02X}>": b for b in range(256)} | {"\u2581hi": 256}
_BYTE_LEVEL_VOCAB = {c: i for i, c in enumerate(sorted(_BYTE_LEVEL_CHARSET))} | {
    "\u0120hi": 256, "<|endoftext|>": 257}


@pytest.mark.parametrize("vocab, expected", [
    (_BYTE_FALLBACK_VOCAB, xg.VocabType.BYTE_FALLBACK),
    (_BYTE_LEVEL_VOCAB, xg.VocabType.BYTE_LEVEL),
    # The byte pieces win over a byte-level alphabet present as ordinary pieces.
    (_BYTE_LEVEL_VOCAB | {k: v + 300 for k, v in _BYTE_FALLBACK_VOCAB.items()},
     xg.VocabType.BYTE_FALLBACK),
    # The alphabet is there, but over 1% of the tokens are spelled outside it.
    (_BYTE_LEVEL_VOCAB | {f"\u4f60{i}": 300 + i for i in range(10)}, None),
    ({"hello": 0, "##ing": 1, "\u4f60": 2}, None),
    ({f"<0x{b:02X}>": b for b in range(127)}, None),
])
def test_detect_vocab_type_from_vocab(vocab, expected):
    assert xg.TokenizerInfo._detect_vocab_type_from_vocab(vocab) == expected


def test_base_exports_the_native_module():
    from xg2_jax import _core, base

    assert base._core is _core


@pytest.mark.parametrize("vocab_size, indices, masked", [
    (None, None, {0: [1, 2], 1: [1, 2]}),
    (2, None, {0: [1], 1: [1]}),
    (None, [1], {0: [], 1: [1, 2]}),
])
def test_cpu_kernel_masks_numpy_logits_in_place(vocab_size, indices, masked):
    from xg2_jax.kernels import apply_token_bitmask_inplace_cpu

    logits = np.ones((2, 4), dtype=np.float32)
    bitmask = np.array([[0b1001], [0b1001]], dtype=np.int32)
    apply_token_bitmask_inplace_cpu(logits, bitmask, vocab_size, indices)
    for row, cols in masked.items():
        assert np.flatnonzero(np.isinf(logits[row])).tolist() == cols


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cpu_kernel_masks_torch_logits(dtype):
    torch = pytest.importorskip("torch")
    from xg2_jax.kernels import apply_token_bitmask_inplace_cpu

    logits = torch.ones(10, dtype=getattr(torch, dtype))
    apply_token_bitmask_inplace_cpu(logits, torch.tensor([0b1010101010], dtype=torch.int32))
    assert torch.isinf(logits).tolist() == [True, False] * 5


class _OffHostTensor:
    """Stands for an accelerator tensor: only its device is read before the refusal."""

    class device:  # noqa: N801 - mirrors torch.Tensor.device
        type = "cuda"


def test_cpu_kernel_refuses_tensors_off_the_host():
    from xg2_jax.kernels import apply_token_bitmask_inplace_cpu

    with pytest.raises(xg.InvalidArgumentError, match="logits must be on the CPU"):
        apply_token_bitmask_inplace_cpu(_OffHostTensor(), np.zeros(1, dtype=np.int32))


@pytest.mark.parametrize("vocab, kwargs", [
    (["a", "b", "</s>"], {}),
    (["<s>", "</s>", "\u2581hi", "<0x0A>"], dict(vocab_type=xg.VocabType.BYTE_FALLBACK,
                                                vocab_size=8, add_prefix_space=True,
                                                stop_token_ids=[0, 1])),
    (["\u0120a", "b", "<|endoftext|>"], dict(vocab_type=xg.VocabType.BYTE_LEVEL)),
])
def test_metadata_round_trip(vocab, kwargs):
    info = xg.TokenizerInfo(vocab, **kwargs)
    back = xg.TokenizerInfo.from_vocab_and_metadata(vocab, info.dump_metadata())
    for attr in ("vocab_type", "vocab_size", "add_prefix_space", "stop_token_ids",
                 "decoded_vocab", "special_token_ids"):
        assert getattr(back, attr) == getattr(info, attr), attr


@pytest.mark.parametrize("metadata, error, message", [
    ("{", xg.InvalidJSONError, "not valid JSON"),
    ("[]", xg.DeserializeFormatError, "must be an object"),
    ('{"vocab_size":2,"add_prefix_space":false,"stop_token_ids":[]}', xg.DeserializeFormatError,
     "'vocab_type'"),
    ('{"vocab_type":3,"vocab_size":2,"add_prefix_space":false,"stop_token_ids":[]}',
     xg.DeserializeFormatError, "must be 0, 1 or 2"),
    ('{"vocab_type":0,"vocab_size":true,"add_prefix_space":false,"stop_token_ids":[]}',
     xg.DeserializeFormatError, "'vocab_size' must be an int"),
    ('{"vocab_type":0,"vocab_size":2,"add_prefix_space":0,"stop_token_ids":[]}',
     xg.DeserializeFormatError, "'add_prefix_space' must be a bool"),
    ('{"vocab_type":0,"vocab_size":2,"add_prefix_space":false,"stop_token_ids":[9]}',
     xg.TokenizerError, "9"),
])
def test_metadata_errors_are_typed(metadata, error, message):
    with pytest.raises(error, match=message):
        xg.TokenizerInfo.from_vocab_and_metadata(["a", "b"], metadata)
