"""Writes the seed corpora under fuzz/corpus/<harness>/ (run again after changing the seeds).

Usage: python fuzz/make_seed_corpus.py
"""

from __future__ import annotations

import hashlib
import json
import struct

from common import FUZZ_DIR, small_compiler, xg

EBNF = [
    'root ::= "yes" | "no"',
    'root ::= [a-z]+ "@" [0-9]{2,3}',
    'root ::= item ("," item)*\nitem ::= "x" | "(" root ")"',
    'root ::= "a"{0,1000000}',
    'root ::= ("ab" | "a"){2,5} [^\\n]* "\\u00e9"',
    'root ::= obj\nobj ::= "{" ws ( pair ( "," ws pair )* )? "}"\npair ::= "\\"" [a-z]* "\\"" ws ":" ws obj\nws ::= [ \\t\\n]*',
    '# comment\nroot ::= a b\na ::= "x"?\nb ::= "y"+ (= "z")?',
    'root ::= root "a" | "b"',
    'root ::= "\\x00\\xff" [\\u0100-\\U0010FFFF] . "\\t"',
    'root ::= ((("a"))) | [] ',
]
REGEX = [
    r"[a-z]+@\d{2,3}", r"(a*)*b", r"(a|a)*", r"^(?:\+?1[-. ]?)?\(?\d{3}\)?$", r"(?<n>ab)|c+?",
    r"[^\x00-\x1f\u00e9]{1,5}", r"\w+\s*\.\W", r"a{0,100000}", r"(((a)))|b|", r"[\u{1F600}-\u{1F64F}]",
    r"ab?c{2,}d{3}", r"\cJ\t\v\0",
]
SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "required": ["a"]},
    {"type": "array", "items": {"type": "number", "minimum": -5, "maximum": 7.5},
     "minItems": 1, "maxItems": 4},
    {"enum": ["red", "green", 3, None, True]},
    {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
    {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
     "$ref": "#/$defs/n"},
    {"type": "string", "pattern": "^[a-f0-9]{4}$"},
    {"type": "string", "format": "date-time"},
    {"allOf": [{"type": "object", "properties": {"x": {"const": 1}}},
               {"required": ["x"]}], "additionalProperties": False},
    {"type": "object", "patternProperties": {"^s_": {"type": "string"}}, "minProperties": 1},
    {"type": ["integer", "boolean"], "not": {"const": 0}},
    {"oneOf": [{"type": "integer", "multipleOf": 3}, {"type": "array", "prefixItems": [{}],
                                                      "items": False}]},
    True,
]
TOKENIZER_JSON = [
    {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġa": 3, "Ċ": 4},
               "merges": ["a b"]},
     "added_tokens": [{"id": 5, "content": "<|endoftext|>", "special": True}],
     "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
     "decoder": {"type": "ByteLevel"}},
    {"model": {"type": "BPE", "byte_fallback": True,
               "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁a": 4, "b": 5, "c": 6}},
     "added_tokens": [{"id": 1, "content": "<s>", "special": True},
                      {"id": 2, "content": "</s>", "special": True}],
     "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}]},
     "decoder": {"type": "Sequence", "decoders": [
         {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
         {"type": "ByteFallback"}]}},
    {"model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁a", -1.0], ["b", -2.0],
                                            ["c", -2.5]]},
     "pre_tokenizer": {"type": "Metaspace", "prepend_scheme": "always"}},
    {"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##b": 2, "c": 3}}},
]


def tokenizer_list_seeds():
    def enc(flags, stops, tokens, steer=b"\x01\x02"):
        out = bytes([flags, len(stops)]) + steer
        out += b"".join(struct.pack("<H", s + 8) for s in stops)
        return out + b"\xff".join(tokens)
    return [
        enc(0, [3], [b"a", b"b", b"ab", b"</s>", b"c"]),
        enc(1, [], ["<0x0A>".encode(), "▁a".encode(), b"b", "</s>".encode(), b"<0xC3>", b"<0xA9>"]),
        enc(2, [0], ["Ġa".encode(), "Ċ".encode(), b"abc", "<|endoftext|>".encode(), b"a", b"b", b"c"]),
        enc(0x10 | 0x20 | 0x40, [1], [b"a", b"", b"\xc3", b"\xa9", b"bc"]),
        enc(0x08 | 4, [1], [b"x", b"a", b"ab", b"abc", "é".encode()]),
    ]


def deserialize_seeds():
    out = []
    for i, g in enumerate(['root ::= "a" | "b"+', 'root ::= [a-c]{1,4} "x"?',
                           xg.Grammar.builtin_json_grammar().to_ebnf()]):
        blob = small_compiler().compile_grammar(g, lazy=bool(i & 1)).serialize()
        out.append(b"\x00\x03\x04" + blob)                 # mode 0: whole blob
        out.append(b"\x01\x05\x06" + blob[24:])            # mode 1: payload
    out.append(b"\x02\x07\x08root\0root ::= \"ab\" [0-9]*")  # mode 2: root \0 grammar
    out.append(b"\x02\x01\x01start\0start ::= x x\nx ::= \"x\"{1,3}")
    return out


def matcher_seeds():
    return [bytes([g, *ops]) for g, ops in [
        (0, [0] * 12 + [3, 2, 10, 9, 4]),
        (1, [0, 0, 5, 0, 1, 6, 0, 3, 1, 10, 7, 0, 7, 1]),
        (2, [0, 0, 0, 8, 3, 97, 98, 99, 9, 10, 0, 3, 5]),
        (3, [0, 1, 2, 0, 0, 0, 0, 5, 3, 4, 6, 1, 10, 7, 4]),
        (0x11, [0, 0, 0, 0, 0, 0, 0, 0, 10, 2, 0, 0, 0, 0, 3, 200]),
    ]]


def write(name: str, items) -> None:
    d = FUZZ_DIR / "corpus" / name
    d.mkdir(parents=True, exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    for data in items:
        if isinstance(data, str):
            data = data.encode("utf-8")
        (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def write_dicts() -> None:
    from registry import DICTIONARY, word_bytes

    d = FUZZ_DIR / "dicts"
    d.mkdir(exist_ok=True)
    for name, words in DICTIONARY.items():
        lines = []
        for w in words:
            raw = word_bytes(w)
            esc = "".join(chr(c) if 0x20 <= c < 0x7F and c not in b'"\\' else f"\\x{c:02X}"
                          for c in raw)
            lines.append(f'"{esc}"')
        (d / f"{name}.dict").write_text("\n".join(lines) + "\n")


_TAG = {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}
STRUCTURAL_TAGS = [
    {"type": "const_string", "value": "ab"},
    _TAG,
    {"type": "tag", "begin": "<b>", "content": {"type": "json_schema", "json_schema": {
        "type": "object", "properties": {"x": {"type": "integer"}}}}, "end": ["</b>", "."]},
    {"type": "triggered_tags", "triggers": ["<a"], "tags": [_TAG], "excludes": ["zz"]},
    {"type": "triggered_tags", "triggers": ["<a"], "tags": [_TAG], "at_least_one": True,
     "stop_after_first": True},
    {"type": "tags_with_separator", "tags": [_TAG], "separator": ","},
    {"type": "sequence", "elements": [{"type": "regex", "pattern": "[0-9]+"},
                                      {"type": "any_text", "excludes": ["x"], "max_chars": 4}]},
    {"type": "or", "elements": [{"type": "grammar", "grammar": 'root ::= "q"+'},
                                {"type": "repeat", "min": 1, "max": 3, "content": _TAG}]},
    {"type": "dispatch", "rules": [["#", {"type": "const_string", "value": "!"}]], "loop": False},
    {"type": "json_schema", "style": "qwen_xml", "json_schema": {
        "type": "object", "properties": {"p": {"type": "string"}, "n": {"type": "number"}}}},
    {"type": "tag", "begin": {"type": "token", "token": 0}, "content": {"type": "any_tokens"},
     "end": "."},
]


def main() -> None:
    write_dicts()
    write("ebnf", [b"\x00\x01" + t.encode() for t in EBNF])
    write("regex", [b"\x02\x03" + t.encode() for t in REGEX])
    write("json_schema", [bytes([i * 37 % 128, 1, 2]) + json.dumps(s).encode()
                          for i, s in enumerate(SCHEMAS)])
    write("structural_tag", [b"\x03\x04" + json.dumps({"type": "structural_tag", "format": f}).encode()
                             for f in STRUCTURAL_TAGS])
    write("tokenizer_json", [b"\x01\x02" + json.dumps(t).encode() for t in TOKENIZER_JSON])
    write("tokenizer_list", tokenizer_list_seeds())
    write("deserialize", deserialize_seeds())
    write("matcher", matcher_seeds())


if __name__ == "__main__":
    main()
