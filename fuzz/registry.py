"""Harness names (the folders under corpus/ and crashes/) and their modules."""

HARNESSES = {
    "ebnf": "fuzz_ebnf",
    "regex": "fuzz_regex",
    "json_schema": "fuzz_json_schema",
    "structural_tag": "fuzz_structural_tag",
    "tokenizer_json": "fuzz_tokenizer_json",
    "tokenizer_list": "fuzz_tokenizer_list",
    "deserialize": "fuzz_deserialize",
    "matcher": "fuzz_matcher",
}

# Words the mutator splices into inputs (atheris gets them with -dict=fuzz/dicts/<name>.dict).
DICTIONARY = {
    "ebnf": ["::=", "root", " | ", "*", "+", "?", "{0,1000000000}", "{3}", "{2,}", "(", ")",
             "[", "]", "[^", "\"", "\\", "\\u00e9", "\\x00", "\n", "#", ".", "(=", "-", "a ::= b\n"],
    "regex": ["(", ")", "(?:", "(?<n>", "|", "*", "+", "?", "*?", "{0,100000}", "{2,}", "[",
              "]", "[^", "\\d", "\\w", "\\s", "\\u{1F600}", "\\x7f", "\\c", "^", "$", ".", "a", "b"],
    "json_schema": ['"type"', '"object"', '"array"', '"string"', '"integer"', '"number"',
                    '"properties"', '"items"', '"required"', '"enum"', '"const"', '"anyOf"',
                    '"allOf"', '"oneOf"', '"not"', '"$ref"', '"#/$defs/a"', '"$defs"', '"a"',
                    '"minItems"', '"maxItems"', '"maxLength"', '"minLength"', '"pattern"',
                    '"format"', '"minimum"', '"maximum"', '"additionalProperties"', '1000000000',
                    '-1e308', 'true', 'false', 'null', '{', '}', '[', ']', ':', ','],
    "structural_tag": ['"type"', '"structural_tag"', '"format"', '"const_string"', '"value"',
                       '"tag"', '"begin"', '"end"', '"content"', '"any_text"', '"excludes"',
                       '"triggered_tags"', '"triggers"', '"tags"', '"at_least_one"',
                       '"stop_after_first"', '"sequence"', '"or"', '"elements"', '"dispatch"',
                       '"rules"', '"loop"', '"json_schema"', '"style"', '"qwen_xml"', '"regex"',
                       '"pattern"', '"grammar"', '"token"', '"any_tokens"', '"exclude_tokens"',
                       '"token_triggered_tags"', '"trigger_tokens"', '"tags_with_separator"',
                       '"separator"', '"repeat"', '"min"', '"max"', '"max_chars"', '"<a>"',
                       '"</a>"', '"<"', '"\u00e9"', '1000000', 'true', 'false', '{', '}', '[', ']'],
    "tokenizer_json": ['"model"', '"vocab"', '"BPE"', '"Unigram"', '"added_tokens"', '"id"',
                       '"content"', '"special"', '"decoder"', '"pre_tokenizer"', '"ByteLevel"',
                       '"Metaspace"', '"Sequence"', '"decoders"', '"byte_fallback"', '"<0x0A>"',
                       '"\\u2581"', '"\\u0120"', '"\\ud800"', '1000000000', '-1', '{', '}', '[', ']'],
    "tokenizer_list": ["\xff", "<0x", "\u2581", "\u0120", "</s>", "<|endoftext|>"],
    "deserialize": ["XG2C", "root", "::=", "\x00", "\x01\x00\x00\x00", "\xff\xff\xff\xff"],
    "matcher": [],
}


def word_bytes(word: str) -> bytes:
    """A dictionary word as bytes: latin-1 when it fits (so "\\xff" is the byte 0xFF)."""
    try:
        return word.encode("latin-1")
    except UnicodeEncodeError:
        return word.encode("utf-8", "surrogatepass")
