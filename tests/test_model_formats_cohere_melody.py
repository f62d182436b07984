"""The ``cohere`` built-in format against Cohere's own renderer (Melody's ``render_cmd5``).

Melody (PyPI ``cohere_melody``) renders a Command (cmd5) conversation into the exact text the
model sees and emits, so it is the oracle for what our ``cohere`` structural tag must accept.
Each case renders a conversation whose last chatbot turn holds reasoning, text and tool calls,
cuts out what the model generated (the completed turn, minus the end-of-turn stop token and
minus what the generation prompt already held, as Melody writes that prompt), and checks the
grammar of ``get_model_structural_tag("cohere", ...)`` on it. The tool-call arguments are
validated with ``jsonschema`` first, so a rejection is the grammar's fault and not the case's.

What Melody writes (and these tests pin down):
- The generation prompt is ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>`` then
  ``<|START_THINKING|>`` (reasoning enabled) or ``<|START_THINKING|><|END_THINKING|>``
  (disabled), so with reasoning on the output starts inside the block (our
  ``reasoning_prefilled`` default). ``reasoning="auto"`` has no prompt of its own in Melody;
  there the model writes the whole block, or none (docs/XGRAMMAR_COMPAT.md).
- Text is wrapped in ``<|START_TEXT|>...<|END_TEXT|>``. A turn with tool calls has no text:
  Melody drops it (or, with no thinking, writes it as the thinking).
- Calls: ``<cofl:tool_calls><cofl:tool_call id="0" name="NAME">`` value nodes
  ``</cofl:tool_call>...</cofl:tool_calls>``; ids are renumbered 0, 1, ...; names (tool and
  property) XML-escaped; string values raw (``<``, ``&``, quotes and newlines as they are);
  other scalars as JSON, re-serialized (``1e20``, ``1.5e-7``).

Negative checks mutate Melody's output (wrong tool name, a required argument dropped, a value
of the wrong type, a broken closing tag, the think opener inside reasoning, ...) and expect a
rejection, so the positive checks cannot pass vacuously. The hand-written renderer of
tests/model_format_cases.py (used by test_model_formats*.py) is compared with Melody too.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema
import pytest

melody = pytest.importorskip("cohere_melody")

from bfcl_lib import BFCL_DIR, bfcl_tool, closed_schema, in_schema_order  # noqa: E402
from model_format_cases import CALL_SEARCH, CALL_WEATHER, RENDERERS, TOOLS  # noqa: E402
from model_format_cases import REASONING as CASE_REASONING  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax.testing import _is_grammar_accept_string  # noqa: E402

CHATBOT = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
END_OF_TURN = "<|END_OF_TURN_TOKEN|>"        # the stop token: generation ends on it
THINK_OPEN, THINK_END = "<|START_THINKING|>", "<|END_THINKING|>"


def tool(name: str, parameters: dict, description: str = "") -> dict:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": parameters}}


# ----------------------------------------------------------------------------------------------
# Tools with argument schemas of real variety
# ----------------------------------------------------------------------------------------------
SEND = tool("send_message", {"type": "object", "properties": {
    "to": {"type": "string"},
    "body": {"type": "string"},
    "cc": {"type": "array", "items": {"type": "string"}}},
    "required": ["to", "body"]})

SCHEDULE = tool("schedule_meeting", {"type": "object", "properties": {
    "title": {"type": "string"},
    "hour": {"type": "integer", "minimum": 0, "maximum": 23},
    "duration_h": {"type": "number"},
    "remote": {"type": "boolean"},
    "room": {"type": ["string", "null"]},
    "priority": {"type": "string", "enum": ["low", "normal", "high"]},
    "attendees": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "email": {"type": "string"},
        "optional": {"type": "boolean"}}, "required": ["name"]}},
    "location": {"type": "object", "properties": {
        "city": {"type": "string"},
        "address": {"type": "object", "properties": {
            "street": {"type": "string"}, "zip": {"type": "integer"}}}}}},
    "required": ["title", "hour"]})

# Free keys: a map of labels, an unconstrained object, and additional top-level numbers.
TAG = tool("tag_item", {"type": "object", "properties": {
    "item_id": {"type": "integer"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "extra": {"type": "object"}},
    "required": ["item_id"], "additionalProperties": {"type": "number"}})

# Unions, untyped values, $ref, const/enum literals, nested lists, constrained strings (raw,
# matched against their pattern/format/lengths), an XML-sensitive declared name.
RECORD = tool("update_record", {"type": "object", "properties": {
    "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "payload": {},
    "version": {"type": ["integer", "string"]},
    "origin": {"$ref": "#/$defs/point"},
    "path": {"type": "array", "items": {"$ref": "#/$defs/point"}},
    "op": {"const": "a<b & c"},
    "level": {"enum": [1, 2.5, "max", None, True]},
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
    "day": {"type": "string", "format": "date"},
    "contact": {"type": "string", "format": "email"},
    "short": {"type": "string", "minLength": 1, "maxLength": 8},
    "a&b <c>": {"type": "integer"},
    "scale": {"type": "number", "exclusiveMinimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "span": {"type": "array", "prefixItems": [{"type": "string", "format": "date"},
                                              {"type": "integer", "minimum": 1}], "items": False},
    "bounds": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
               "items": {"type": "string", "enum": ["m", "ft"]}}},
    "required": ["id"],
    "$defs": {"point": {"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}}})

NO_ARGS = tool("ping", {"type": "object", "properties": {}})

XML_TEXT = 'He said "hi" & left.\n<b>bold</b> a<b, c>d; naïve café, 北京 🙂 \'single\'\t'

# (id, tool, arguments): every one valid for its tool's schema (checked in _checked_calls).
ARGUMENT_CASES = [
    ("xml_sensitive_strings", SEND, {"to": "Tom & Jerry <tj@example.com>", "body": XML_TEXT,
                                     "cc": ["x'y\"z", "<&>", "  spaced  "]}),
    ("empty_string_and_list", SEND, {"to": "", "body": "", "cc": []}),
    ("scalars", SCHEDULE, {"title": "Sync", "hour": 0, "duration_h": 1.5, "remote": False,
                           "room": None, "priority": "high"}),
    ("number_spellings", SCHEDULE, {"title": "1e3", "hour": 23, "duration_h": 1.5e-7,
                                    "remote": True, "room": "42"}),
    ("large_and_negative_numbers", SCHEDULE, {"title": "t", "hour": 7, "duration_h": -1e20}),
    ("whole_number_float", SCHEDULE, {"title": "t", "hour": 7, "duration_h": 2.0}),
    ("nested_objects_and_array_of_objects", SCHEDULE, {
        "title": "Offsite <Q3>", "hour": 9,
        "attendees": [{"name": "Ada", "email": "ada@x.org", "optional": True},
                      {"name": "Bob & Co"}],
        "location": {"city": "Zürich", "address": {"street": "Main \"St\" 1", "zip": 8001}}}),
    ("optional_properties_omitted", SCHEDULE, {"title": "Short", "hour": 12}),
    ("empty_nested_object", SCHEDULE, {"title": "t", "hour": 1, "location": {}}),
    ("free_keys", TAG, {"item_id": 5, "labels": {"color": "red", "a&b": "x<y", "ü-key": "v",
                                                 'q"k': "", "<tag>": "&amp;"},
                        "extra": {"n": 1, "deep": {"k": [1, "two", None, {"z": False}]},
                                  "f": 0.25},
                        "weight": 2.5, "k>2": -3}),
    ("unions_and_untyped_values", RECORD, {
        "id": "A-1 <x>", "payload": {"k": [1, "two", {"z": None}], "n": -0.0},
        "version": "v2", "level": "max", "tags": ["<&>"]}),
    ("union_numbers_and_literals", RECORD, {
        "id": 42, "payload": "plain & raw", "version": 3, "op": "a<b & c", "level": 2.5}),
    ("refs_and_nested_lists", RECORD, {
        "id": 0, "origin": {"x": 0, "y": -1.5}, "path": [{"x": 1e-6, "y": 1e16}],
        "grid": [[1, 2], [], [3]], "level": None}),
    ("constrained_strings", RECORD, {
        "id": "r", "code": "ABC-12", "day": "2024-02-29", "contact": "first.last+tag@example.org",
        "short": '<&>"', "scale": 1e-6}),
    ("tuples", RECORD, {"id": "t", "span": ["2024-01-01", 3], "bounds": [-1.5, 2, "ft"]}),
    ("short_tuple", RECORD, {"id": "t", "span": ["2024-01-01"], "bounds": []}),
    ("xml_sensitive_declared_name", RECORD, {"id": 1, "payload": None, "a&b <c>": 5,
                                             "level": True}),
    ("no_arguments", NO_ARGS, {}),
]
# in the order the schema declares the properties, as the model writes them (any_order=False)
ARGUMENT_CASES = [(i, t, in_schema_order(a, t["function"]["parameters"]))
                  for i, t, a in ARGUMENT_CASES]


# ----------------------------------------------------------------------------------------------
# Rendering with Melody and cutting out the model's output
# ----------------------------------------------------------------------------------------------
def _melody_tools(tools: list[dict]) -> list[dict]:
    return [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
             "parameters": t["function"]["parameters"]} for t in tools]


def _render(tools: list[dict], chatbot: dict | None, reasoning_type: str,
            skip_thinking: bool = False) -> str:
    messages: list[dict] = [{"role": "user", "content": [{"type": "text",
                                                          "text": "Plan my week <please>."}]}]
    if chatbot is not None:
        messages.append(chatbot)
    return melody.render_cmd5({
        "messages": messages, "available_tools": _melody_tools(tools), "grounding": "disabled",
        "reasoning_type": reasoning_type,
        # skip_thinking drops the thinking of earlier chatbot turns; kept (False) the completed
        # turn is the generation prompt followed by what the model wrote.
        "additional_template_fields": {"skip_thinking": skip_thinking}})


def _chatbot(thinking: str | None, text: str | None, calls: list[tuple[str, dict]]) -> dict:
    content = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        content.append({"type": "text", "text": text})
    msg: dict[str, Any] = {"role": "chatbot", "content": content}
    if calls:
        msg["tool_calls"] = [{"id": f"call_{i}", "name": n,
                              "parameters": json.dumps(a, ensure_ascii=False)}
                             for i, (n, a) in enumerate(calls)]
    return msg


def generation_prompt(tools: list[dict], reasoning_type: str) -> str:
    """What Melody's generation prompt holds of the new chatbot turn (after the chatbot token)."""
    return _render(tools, None, reasoning_type).rsplit("<|CHATBOT_TOKEN|>", 1)[1]


def completed_turn(rendered: str) -> str:
    """The chatbot turn before the final generation prompt, without its end-of-turn token."""
    parts = rendered.split(CHATBOT)
    assert len(parts) == 3, rendered        # system+user, the completed turn, the new prompt
    turn = parts[1]
    assert turn.endswith(END_OF_TURN), turn
    return turn[: -len(END_OF_TURN)]


def model_output(tools: list[dict], reasoning: str, *, thinking: str | None = None,
                 text: str | None = None, calls: list[tuple[str, dict]] = (),
                 melody_reasoning: str | None = None) -> str:
    """What the model generated for a chatbot turn, as Melody renders it.

    ``reasoning`` is ours: ``"enabled"``/``"disabled"`` render with that Melody reasoning type
    and drop what the generation prompt already holds; ``"auto"`` keeps the whole turn (the
    model opens its own block, or writes none) and renders with ``melody_reasoning``.
    """
    calls = _checked_calls(tools, calls)
    if reasoning == "auto":
        # With Melody's "disabled" and skip_thinking the turn has no block at all.
        skip = melody_reasoning == "disabled" and thinking is None
        return completed_turn(_render(tools, _chatbot(thinking, text, calls),
                                      melody_reasoning or "enabled", skip_thinking=skip))
    turn = completed_turn(_render(tools, _chatbot(thinking, text, calls), reasoning))
    prompt = generation_prompt(tools, reasoning)
    assert turn.startswith(prompt), (prompt, turn)
    return turn[len(prompt):]


def _checked_calls(tools: list[dict], calls) -> list[tuple[str, dict]]:
    """The calls, each validated against its tool's schema (closed as the grammar reads it)."""
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for name, args in calls:
        jsonschema.Draft202012Validator(closed_schema(schemas[name])).validate(args)
    return list(calls)


_GRAMMARS: dict[str, xg.Grammar] = {}


def accepts(output: str, tools: list[dict], **kwargs) -> bool:
    """Whether the cohere grammar for ``tools`` and ``kwargs`` accepts ``output`` in full."""
    key = json.dumps([tools, kwargs], sort_keys=True)
    if key not in _GRAMMARS:
        _GRAMMARS[key] = xg.Grammar.from_structural_tag(
            xg.get_model_structural_tag("cohere", tools, **kwargs))
    return _is_grammar_accept_string(_GRAMMARS[key], output)


def _forced(name: str) -> dict:
    return {"type": "function", "function": {"name": name}}


# ----------------------------------------------------------------------------------------------
# Turn shapes: reasoning x tool_choice x number of tools x number of calls
# ----------------------------------------------------------------------------------------------
CALL_SEND = ("send_message", {"to": "ops & <dev>", "body": "Deploy \"v2\" now.\nThanks!"})
CALL_SCHEDULE = ("schedule_meeting", {"title": "Retro", "hour": 15, "remote": True,
                                      "attendees": [{"name": "Zoë"}]})
THINKING = "User wants <two> things & \"quickly\".\nPlan: send, then schedule."

# (id, tools, text, calls)
SHAPES = [
    ("0tools_text", [], "Nothing to call: here is a <b>plan</b> & more.", []),
    ("1tool_text", [SEND], "I can message them if you like.", []),
    ("1tool_1call", [SEND], None, [CALL_SEND]),
    ("1tool_2calls", [SEND], None, [CALL_SEND, ("send_message", {"to": "b", "body": "c"})]),
    ("2tools_text", [SEND, SCHEDULE], "Which one first?", []),
    ("2tools_1call", [SEND, SCHEDULE], None, [CALL_SCHEDULE]),
    ("2tools_2calls", [SEND, SCHEDULE], None, [CALL_SEND, CALL_SCHEDULE]),
    # Melody leaves text beside calls out, or writes it as the thinking when there is none
    ("text_beside_calls", [SEND, SCHEDULE], "Let me schedule it.", [CALL_SCHEDULE]),
]

# (id, our reasoning, thinking, Melody's reasoning type for "auto")
REASONING = [
    ("enabled", "enabled", THINKING, None),
    ("enabled_empty_thinking", "enabled", None, None),
    ("disabled", "disabled", None, None),
    ("auto_with_block", "auto", THINKING, "enabled"),
    ("auto_empty_block", "auto", None, "enabled"),
    ("auto_without_block", "auto", None, "disabled"),
]

TOOL_CHOICES = ["auto", "required", "forced", "none"]


def _choice_allows(choice: str, tools: list[dict], calls: list) -> bool:
    if choice == "auto":
        return True
    if choice == "none":
        return not calls
    if choice == "required":
        return bool(calls)
    return len(calls) == 1 and calls[0][0] == tools[-1]["function"]["name"]


def _turn_cases():
    """Every shape under every reasoning mode and tool choice, but the ones with no meaning: a
    required or forced call with no tool, and text beside calls with reasoning off (Melody
    writes that text as thinking, which such a turn cannot have)."""
    for choice in TOOL_CHOICES:
        for shape_id, tools, text, calls in SHAPES:
            for reasoning_id, reasoning, thinking, melody_reasoning in REASONING:
                if choice in ("required", "forced") and not tools:
                    continue
                if reasoning == "disabled" and text and calls:
                    continue
                yield pytest.param(choice, tools, text, calls, reasoning, thinking,
                                   melody_reasoning, id=f"{choice}-{shape_id}-{reasoning_id}")


@pytest.mark.parametrize("choice, tools, text, calls, reasoning, thinking, melody_reasoning",
                         list(_turn_cases()))
def test_melody_turn_matches_tool_choice(choice, tools, text, calls, reasoning, thinking,
                                         melody_reasoning):
    """A Melody turn is accepted exactly when the tool choice allows its calls: any in "auto",
    at least one in "required", one call to the named tool when forced, none in "none"."""
    tool_choice = _forced(tools[-1]["function"]["name"]) if choice == "forced" else choice
    output = model_output(tools, reasoning, thinking=thinking, text=text, calls=calls,
                          melody_reasoning=melody_reasoning)
    ok = _choice_allows(choice, tools, calls)
    assert accepts(output, tools, tool_choice=tool_choice, reasoning=reasoning) == ok, output
    if ok and not (text and calls):  # (Melody leaves such text out or makes it the thinking)
        # Parsed back, the turn is what Melody was given.
        tag = xg.get_model_structural_tag("cohere", tools, tool_choice=tool_choice,
                                          reasoning=reasoning)
        message = xg.parse_structured_output(output, tag, tools=tools)
        assert message["content"] == text, output
        assert message["reasoning_content"] == (thinking.strip() if thinking else None), output
        assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in message["tool_calls"]] == calls, output


@pytest.mark.parametrize("reasoning", ["enabled", "disabled"])
def test_parallel_calls_need_parallel_tool_calls(reasoning):
    """Melody writes parallel calls one after the other in one section; with
    parallel_tool_calls=False only the first may be written."""
    tools = [SEND, SCHEDULE]
    one = model_output(tools, reasoning, calls=[CALL_SEND])
    two = model_output(tools, reasoning, calls=[CALL_SEND, CALL_SCHEDULE])
    assert accepts(one, tools, reasoning=reasoning, parallel_tool_calls=False)
    assert not accepts(two, tools, reasoning=reasoning, parallel_tool_calls=False)
    assert accepts(two, tools, reasoning=reasoning)


# ----------------------------------------------------------------------------------------------
# Arguments: value nodes for every kind of schema
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reasoning", ["enabled", "disabled", "auto"])
@pytest.mark.parametrize("case_id, tl, args", ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_melody_arguments_are_accepted(case_id, tl, args, reasoning):
    """Each argument object as Melody writes it, beside other tools and forced to its own."""
    tools = [SEND, SCHEDULE, TAG, RECORD, NO_ARGS]
    name = tl["function"]["name"]
    thinking = THINKING if reasoning != "disabled" else None
    output = model_output(tools, reasoning, thinking=thinking, calls=[(name, args)])
    assert accepts(output, tools, reasoning=reasoning), output
    assert accepts(output, tools, reasoning=reasoning, tool_choice=_forced(name)), output


# ----------------------------------------------------------------------------------------------
# BFCL tools: real definitions, with generated arguments
# ----------------------------------------------------------------------------------------------
# (file, function name): nested objects, arrays of objects, enums with "<"/">=" values,
# numbers, booleans, free objects (``items: {"type": "object"}``), dotted names.
BFCL_PICKS = [
    ("BFCL_v4_simple_python.json", "database.query"),
    ("BFCL_v4_simple_python.json", "find_card_in_deck"),
    ("BFCL_v4_simple_python.json", "update_user_info"),
    ("BFCL_v4_simple_python.json", "paint_requirement.calculate"),
    ("BFCL_v4_simple_python.json", "get_directions"),
    ("BFCL_v4_simple_python.json", "calculate_final_velocity"),
    ("BFCL_v4_simple_python.json", "cellbio.get_proteins"),
    ("BFCL_v4_live_multiple.json", "transaction_summary.generate"),
    ("BFCL_v4_live_multiple.json", "uber.eat.order"),
]


def _bfcl_tools() -> list[dict]:
    if not BFCL_DIR.is_dir():
        pytest.skip(f"BFCL data not found at {BFCL_DIR}")
    wanted: dict[str, set[str]] = {}
    for file_name, name in BFCL_PICKS:
        wanted.setdefault(file_name, set()).add(name)
    found: dict[str, dict] = {}
    for file_name, names in wanted.items():
        with open(BFCL_DIR / file_name, encoding="utf-8") as f:
            for line in f:
                if not any(f'"{n}"' in line for n in names - found.keys()):
                    continue
                for function in json.loads(line)["function"]:
                    if function["name"] in names:
                        found.setdefault(function["name"], bfcl_tool(function))
    return [found[name] for _, name in BFCL_PICKS]


_STRINGS = [XML_TEXT, "São Paulo & <Rio>", "a \"quoted\" value", "line1\nline2"]


def example_value(schema: dict, full: bool, depth: int = 0) -> Any:
    """A value of ``schema``: every property when ``full``, else the required ones only;
    strings with XML-sensitive and non-ASCII characters, free objects with a few keys."""
    if "enum" in schema:
        return schema["enum"][-1]
    kind = schema.get("type")
    if kind == "string":
        return _STRINGS[depth % len(_STRINGS)]
    if kind == "integer":
        return 7 + depth
    if kind == "number":
        return 2.5 + depth
    if kind == "boolean":
        return depth % 2 == 0
    if kind == "array":
        items = schema.get("items", {})
        return [example_value(items, full, depth + 1), example_value(items, not full, depth + 2)]
    if kind == "object":
        props = schema.get("properties")
        if props is None:                     # free keys
            return {"note & <n>": "free", "count": 2, "nested": {"ok": True}}
        required = set(schema.get("required", []))
        return {k: example_value(v, full, depth + 1) for k, v in props.items()
                if full or k in required}
    return "untyped"


@pytest.fixture(scope="module")
def bfcl_tools():
    return _bfcl_tools()


@pytest.mark.parametrize("full", [True, False], ids=["all_properties", "required_only"])
@pytest.mark.parametrize("reasoning", ["enabled", "disabled"])
@pytest.mark.parametrize("index", range(len(BFCL_PICKS)), ids=[p[1] for p in BFCL_PICKS])
def test_bfcl_tool_calls_are_accepted(bfcl_tools, index, reasoning, full):
    """A call to a real tool definition, alone ("required") and with a parallel call to the
    next tool ("auto")."""
    target = bfcl_tools[index]
    params = target["function"]["parameters"]
    args = in_schema_order(example_value(params, full), params)
    others = [bfcl_tools[(index + 1) % len(bfcl_tools)]]      # a second tool beside it
    tools = [target, *others]
    thinking = THINKING if reasoning == "enabled" else None
    calls = [(target["function"]["name"], args)]
    output = model_output(tools, reasoning, thinking=thinking, calls=calls)
    assert accepts(output, tools, reasoning=reasoning, tool_choice="required"), output
    # a parallel second call to the other tool, with only its required arguments
    other_params = others[0]["function"]["parameters"]
    calls.append((others[0]["function"]["name"],
                  in_schema_order(example_value(other_params, False), other_params)))
    output = model_output(tools, reasoning, thinking=thinking, calls=calls)
    assert accepts(output, tools, reasoning=reasoning), output


# ----------------------------------------------------------------------------------------------
# Negative checks: mutations of Melody's output
# ----------------------------------------------------------------------------------------------
MUTATION_TOOLS = [SEND, SCHEDULE, TAG]
MUTATION_CALLS = [
    ("schedule_meeting", {"title": "Plan", "hour": 9, "duration_h": 0.5, "remote": True,
                          "priority": "low", "attendees": [{"name": "Ada"}],
                          "location": {"city": "Oslo"}}),
    ("tag_item", {"item_id": 3, "labels": {"a&b": "c"}}),
]


def _node(name: str) -> re.Pattern:
    return re.compile(rf'<cofl:value name="{re.escape(name)}" type="[a-z]+">.*?</cofl:value>')


def _sub_once(pattern: str, repl: str):
    def mutate(text: str) -> str:
        return text.replace(pattern, repl, 1)
    return mutate


# (id, mutation of the output): each makes a turn that Melody would not write and that
# the tool schemas or the format forbid.
MUTATIONS = [
    ("unknown_tool_name", _sub_once('name="schedule_meeting"', 'name="schedule_meetings"')),
    ("tool_name_of_another_schema", _sub_once('name="tag_item"', 'name="send_message"')),
    ("required_argument_removed", lambda t: _node("title").sub("", t, count=1)),
    ("integer_written_raw", _sub_once('name="hour" type="json">9<', 'name="hour" type="raw">9<')),
    ("integer_with_fraction", _sub_once('name="hour" type="json">9<',
                                        'name="hour" type="json">9.5<')),
    ("integer_out_of_range", _sub_once('name="hour" type="json">9<',
                                       'name="hour" type="json">24<')),
    ("string_written_as_json", _sub_once('name="title" type="raw">Plan<',
                                         'name="title" type="json">"Plan"<')),
    ("boolean_written_raw", _sub_once('name="remote" type="json">true<',
                                      'name="remote" type="raw">true<')),
    ("boolean_spelled_wrong", _sub_once('name="remote" type="json">true<',
                                        'name="remote" type="json">True<')),
    ("enum_value_outside", _sub_once('type="raw">low<', 'type="raw">urgent<')),
    ("dict_written_as_list", _sub_once('name="location" type="dict"', 'name="location" type="list"')),
    ("list_item_with_a_name", _sub_once('type="list"><cofl:value type="dict">',
                                        'type="list"><cofl:value name="0" type="dict">')),
    ("undeclared_property", _sub_once('</cofl:tool_call>',
                                      '<cofl:value name="mood" type="raw">x</cofl:value>'
                                      '</cofl:tool_call>')),
    ("free_key_not_escaped", _sub_once('name="a&amp;b"', 'name="a&b"')),
    ("broken_call_closing_tag", _sub_once("</cofl:tool_call>", "</cofl:tool_cal>")),
    ("broken_value_closing_tag", _sub_once(">9</cofl:value>", ">9</cofl:valu>")),
    ("calls_section_not_closed", lambda t: t.removesuffix("</cofl:tool_calls>")),
    ("text_after_calls_section", lambda t: t + "<|START_TEXT|>Done.<|END_TEXT|>"),
    ("call_id_not_a_number", _sub_once('id="0"', 'id="call_0"')),
    ("think_opener_inside_reasoning", _sub_once(THINK_END, f"more{THINK_OPEN}again{THINK_END}")),
    ("think_opener_repeated", lambda t: THINK_OPEN + t),
    ("reasoning_not_ended", _sub_once(THINK_END, "")),
    ("calls_inside_reasoning", _sub_once(THINK_END, f"<cofl:tool_calls>{THINK_END}")),
]


@pytest.fixture(scope="module")
def mutation_base() -> str:
    output = model_output(MUTATION_TOOLS, "enabled", thinking=THINKING, calls=MUTATION_CALLS)
    assert accepts(output, MUTATION_TOOLS, reasoning="enabled")
    return output


@pytest.mark.parametrize("mutation_id, mutate", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutated_melody_output_is_rejected(mutation_base, mutation_id, mutate):
    mutated = mutate(mutation_base)
    assert mutated != mutation_base, "the mutation did not apply"
    assert not accepts(mutated, MUTATION_TOOLS, reasoning="enabled"), mutated


@pytest.mark.parametrize("reasoning, output", [
    ("disabled", f"plan{THINK_END}<|START_TEXT|>Hi.<|END_TEXT|>"),    # a block when off
    ("disabled", f"{THINK_OPEN}{THINK_END}<|START_TEXT|>Hi.<|END_TEXT|>"),
    ("enabled", "<|START_TEXT|>Hi.<|END_TEXT|>"),                       # the block not ended
])
def test_reasoning_mismatch_is_rejected(reasoning, output):
    """The generation prompt fixes the block's state: already open when enabled, already
    closed (so not written again) when disabled."""
    assert not accepts(output, [SEND], reasoning=reasoning)


# ----------------------------------------------------------------------------------------------
# The hand-written renderer of model_format_cases.py against Melody
# ----------------------------------------------------------------------------------------------
def _melody_calls_section(tools, calls) -> str:
    out = model_output(tools, "disabled", calls=calls)
    assert out.startswith("<cofl:tool_calls>") and out.endswith("</cofl:tool_calls>"), out
    return out


@pytest.mark.parametrize("case_id, tl, args", ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_hand_written_renderer_writes_calls_as_melody(case_id, tl, args):
    tools = [tl]
    calls = [(tl["function"]["name"], args), (tl["function"]["name"], copy.deepcopy(args))]
    assert RENDERERS["cohere"].calls(calls) == _melody_calls_section(tools, calls)


def test_hand_written_renderer_cases_match_melody():
    """The calls and reasoning of test_model_formats' Cohere cases are Melody's."""
    calls = [CALL_WEATHER, CALL_SEARCH]
    assert RENDERERS["cohere"].calls(calls) == _melody_calls_section(TOOLS, calls)
    output = model_output(TOOLS, "enabled", thinking=CASE_REASONING, calls=calls)
    assert output == RENDERERS["cohere"].think(CASE_REASONING) + RENDERERS["cohere"].calls(calls)

@pytest.mark.parametrize("value", [1e-5, 1e-6, 1.5e-5, 1e15, 1e16, 1.2345e16, 123456789012345678.0,
                                   0.1, -0.0, 5e-324, 1.7976931348623157e308, 2**64 - 1, -2**63,
                                   2**64, 10**30], ids=repr)
def test_hand_written_renderer_spells_numbers_as_melody(value):
    """Melody re-serializes arguments with serde_json: floats in ryu's spelling, integers
    past 64 bits as floats."""
    tools = [tool("set_value", {"type": "object", "properties": {"v": {}}})]
    calls = [("set_value", {"v": value})]
    assert RENDERERS["cohere"].calls(calls) == _melody_calls_section(tools, calls)


# ----------------------------------------------------------------------------------------------
# Known disagreements, kept (xfail strict: each turns into a failure once it is resolved)
# ----------------------------------------------------------------------------------------------
_TWO_BOUNDS = ("the JSON front end writes a number with both bounds as a plain decimal only "
               "(docs/JSON_SCHEMA.md, as xgrammar, whose bounded numbers have no exponent "
               "either); Melody spells |x| < 1e-5 and |x| >= 1e16 with an exponent")
_WHOLE_FLOAT = ("an integer is written without fraction or exponent, as in xgrammar; Melody "
                "writes a float argument as a float (2.0) and an integer beyond 64 bits as one "
                "(1e30), which JSON Schema counts as integers")


@pytest.mark.parametrize("schema, value, spelled", [
    ({"type": "number", "minimum": 0}, 1e-6, "1e-6"),     # one bound: exponents are written
    ({"type": "number", "minimum": 0, "maximum": 1}, 1e-5, "0.00001"),
    ({"type": "number", "maximum": 0}, -1e16, "-1e16"),
    pytest.param({"type": "number", "minimum": 0, "maximum": 1}, 1e-6, "1e-6",
                 marks=pytest.mark.xfail(strict=True, reason=_TWO_BOUNDS)),
    pytest.param({"type": "integer"}, 2.0, "2.0",
                 marks=pytest.mark.xfail(strict=True, reason=_WHOLE_FLOAT)),
    pytest.param({"type": "integer"}, 10**30, "1e30",
                 marks=pytest.mark.xfail(strict=True, reason=_WHOLE_FLOAT)),
])
def test_numbers_as_melody_spells_them(schema, value, spelled):
    tools = [tool("set_value", {"type": "object", "properties": {"v": schema}, "required": ["v"]})]
    output = model_output(tools, "disabled", calls=[("set_value", {"v": value})])
    assert f'<cofl:value name="v" type="json">{spelled}</cofl:value>' in output, output
    assert accepts(output, tools, reasoning="disabled", tool_choice="required"), output


def test_parsed_text_turn_is_melodys_text():
    """The tag takes Melody's <|START_TEXT|>...<|END_TEXT|> block as free text; the parsed
    content is the text inside it, as Melody's own parser returns it."""
    output = model_output([SEND], "enabled", thinking="plan", text="Hello & <bye>")
    assert output == "plan<|END_THINKING|><|START_TEXT|>Hello & <bye><|END_TEXT|>"
    tag = xg.get_model_structural_tag("cohere", [SEND], reasoning="enabled")
    message = xg.parse_structured_output(output, tag, tools=[SEND])
    assert message["content"] == "Hello & <bye>"
