"""Chat templates render as transformers' apply_chat_template renders them (where
transformers is installed), prompts tokenize through tokenizer.json, and template errors are
typed. The templates below are written here in the style of real checkpoints' templates
(ChatML with tools, reasoning split, loop controls, namespaces, raise_exception)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

import xg2_jax as xg  # noqa: E402
from xg2_jax import models  # noqa: E402

CHATML_TOOLS = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(last_user=messages|length - 1) %}
{%- for message in messages[::-1] %}
  {%- if message.role == 'user' %}{%- set ns.last_user = (messages|length - 1) - loop.index0 %}{% break %}{%- endif %}
{%- endfor %}
{%- for message in messages %}
  {%- if message.role == 'system' and loop.first %}{% continue %}{% endif %}
  {%- if message.role not in ['system', 'user', 'assistant', 'tool'] %}
    {{- raise_exception('unknown role ' + message.role) }}
  {%- endif %}
  {%- if message.role == 'assistant' %}
    {%- set content = message.content or '' %}
    {%- if '</think>' in content %}{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}
    {{- '<|im_start|>assistant\\n' + content }}
    {%- for call in message.tool_calls or [] %}
      {{- '\\n<tool_call>\\n{"name": "' + call.function.name + '", "arguments": ' }}
      {{- call.function.arguments if call.function.arguments is string else call.function.arguments | tojson }}
      {{- '}\\n</tool_call>' }}
    {%- endfor %}
    {{- '<|im_end|>\\n' }}
  {%- else %}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
  {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}
  {%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}
{%- endif %}"""

LLAMA_STYLE = """{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}\
<|end_header_id|>

{{ m['content'] | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}\
<|start_header_id|>assistant<|end_header_id|>

{% endif %}"""

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Météo",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}}}}}]
CONVERSATIONS = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "  Weather?  "}],
    [{"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": "<think>\nlook up\n</think>\n\nChecking.",
      "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                        "arguments": {"city": "Paris"}}}]},
     {"role": "tool", "content": "sunny"}, {"role": "user", "content": "Thanks – and Köln?"}],
]


def _hf_tokenizer(template: str):
    transformers = pytest.importorskip("transformers")
    path = models.default_model_path() / "tokenizer.json"
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path),
                                                bos_token="<|endoftext|>",
                                                eos_token="<|endoftext|>",
                                                chat_template=template)


@pytest.mark.parametrize("template", [CHATML_TOOLS, LLAMA_STYLE], ids=["chatml", "llama"])
@pytest.mark.parametrize("conv", range(len(CONVERSATIONS)))
@pytest.mark.parametrize("with_tools", [False, True])
@pytest.mark.parametrize("extra", [{}, {"enable_thinking": False}], ids=["", "no_think"])
def test_renders_like_transformers(template, conv, with_tools, extra):
    hf = _hf_tokenizer(template)
    messages = CONVERSATIONS[conv]
    tools = TOOLS if with_tools else None
    ours = xg.ChatTemplate(template, special_tokens={"bos_token": "<|endoftext|>",
                                                     "eos_token": "<|endoftext|>"})
    want = hf.apply_chat_template(messages, tools=tools, tokenize=False,
                                  add_generation_prompt=True, **extra)
    assert ours.render(messages, tools=tools, **extra) == want
    ids = xg.ModelTokenizer.from_model_dir(models.default_model_path()).encode(want)
    assert ids == hf(want, add_special_tokens=False)["input_ids"]


def test_shipped_model_template_and_tokenizer():
    path = models.default_model_path()
    tpl = xg.ChatTemplate.from_model_dir(path)
    text = tpl.render([{"role": "user", "content": "Describe a person as JSON."}])
    assert text == "<|endoftext|>Describe a person as JSON.\n"
    tok = xg.ModelTokenizer.from_model_dir(path)
    ids = tok.encode(text)
    assert ids[0] == 50256 and tok.decode(ids) == text
    info = models.load_tokenizer_info(path)
    assert ids[1:] == xg.greedy_tokenize(info, text[len("<|endoftext|>"):].encode())


def test_template_sources(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": {"content": "<s>"}, "chat_template": [
            {"name": "default", "template": "{{ bos_token }}plain"},
            {"name": "tool_use", "template": "{{ bos_token }}tools={{ tools | length }}"}]}))
    tpl = xg.ChatTemplate.from_model_dir(tmp_path)
    assert tpl.render([{"role": "user", "content": "x"}]) == "<s>plain"
    assert tpl.render([{"role": "user", "content": "x"}], tools=TOOLS) == "<s>tools=1"
    (tmp_path / "chat_template.jinja").write_text("J{{ messages | length }}")
    assert xg.ChatTemplate.from_model_dir(tmp_path).render([{"role": "user"}]) == "J1"


def test_template_errors_are_typed(tmp_path):
    with pytest.raises(xg.ChatTemplateError, match="line 1"):
        xg.ChatTemplate("{% for %}")
    tpl = xg.ChatTemplate(CHATML_TOOLS)
    with pytest.raises(xg.ChatTemplateError, match="unknown role robot"):
        tpl.render([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])
    with pytest.raises(FileNotFoundError, match="no chat template"):
        xg.ChatTemplate.from_model_dir(tmp_path)
    with pytest.raises(xg.ModelError, match="no such file"):
        xg.ModelTokenizer.from_model_dir(tmp_path)
