"""xgrammar's deprecated structural-tag form: ``from_structural_tag(tags, triggers)`` and
``compile_structural_tag(tags, triggers)`` with ``StructuralTagItem`` items."""

import json

import pytest

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string

SCHEMA_F = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
SCHEMA_G = {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}


class ModelG:
    """Stands for a pydantic model class (only model_json_schema is read)."""

    @staticmethod
    def model_json_schema():
        return SCHEMA_G


ITEMS = [xg.StructuralTagItem(begin="<f=1>", schema=SCHEMA_F, end="</f>"),
         xg.StructuralTagItem(begin="<f=2>", schema=json.dumps(SCHEMA_F), end="</f>"),
         xg.StructuralTagItem(begin="<g>", schema=ModelG, end="</g>")]
TRIGGERS = ["<f=", "<g>"]
TEXTS = {
    'x<f=1>{"a": 1}</f>y': True,
    '<g>{"b": "z"}</g><f=2>{"a": 2}</f>': True,
    "plain text": True,
    '<f=3>{"a": 1}</f>': False,       # no tag begins so
    '<g>{"a": 1}</g>': False,         # against g's schema
    '<f=1>{"a": 1}': False,           # no end
}


def test_the_legacy_form_is_triggered_tags_and_warns():
    with pytest.warns(DeprecationWarning, match="deprecated"):
        legacy = xg.Grammar.from_structural_tag(ITEMS, TRIGGERS)
    modern = xg.Grammar.from_structural_tag(xg.StructuralTag(format=xg.TriggeredTagsFormat(
        triggers=TRIGGERS, tags=[xg.TagFormat(begin=i.begin, end=i.end, content=xg.JSONSchemaFormat(
            json_schema=SCHEMA_G if i.schema is ModelG else (
                json.loads(i.schema) if isinstance(i.schema, str) else i.schema)))
            for i in ITEMS])))
    for text, ok in TEXTS.items():
        assert _is_grammar_accept_string(legacy, text) == ok, text
        assert _is_grammar_accept_string(modern, text) == ok, text
    compiler = xg.GrammarCompiler(xg.TokenizerInfo([]))
    with pytest.warns(DeprecationWarning):
        compiled = compiler.compile_structural_tag(ITEMS, TRIGGERS)
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_string('x<f=1>{"a": 1}</f>y')
    assert ITEMS[0].schema_ is SCHEMA_F       # xgrammar's field name


@pytest.mark.parametrize("tags, match", [
    ("not a list", "legacy form"),
    ([{"begin": 1, "schema": {}, "end": "x"}], r"tags\[0\]"),
    ([xg.StructuralTagItem(begin="<a>", schema="{not json", end="</a>")], r"tags\[0\]\.schema: not JSON"),
    ([xg.StructuralTagItem(begin="<a>", schema=3, end="</a>")], r"tags\[0\]\.schema must be"),
])
def test_malformed_legacy_items(tags, match):
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match=match):
        xg.Grammar.from_structural_tag(tags, ["<a"])
