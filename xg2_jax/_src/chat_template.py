"""Prompts for real models: a checkpoint's chat template rendered with jinja2, and its
``tokenizer.json`` through the ``tokenizers`` library.

:class:`ChatTemplate` renders ``messages`` and ``tools`` the way transformers'
``apply_chat_template`` does: a sandboxed jinja2 environment with ``trim_blocks`` and
``lstrip_blocks``, the ``loopcontrols`` extension, ``raise_exception``, ``strftime_now`` and
a ``tojson`` filter that keeps non-ASCII text, with ``bos_token``/``eos_token`` and the
template's other special tokens from ``tokenizer_config.json`` in scope. The template comes
from ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of named templates:
``tool_use`` when tools are given, else ``default``) or a ``chat_template.jinja`` file.

Example:
    >>> from xg2_jax import models
    >>> tpl = ChatTemplate.from_model_dir(models.default_model_path())
    >>> tpl.render([{"role": "user", "content": "Return JSON."}])
    '<|endoftext|>Return JSON.\\n'
    >>> tok = ModelTokenizer.from_model_dir(models.default_model_path())
    >>> tok.encode(tpl.render([{"role": "user", "content": "Hi"}]))
    [50256, 17250, 198]
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from xg2_jax._src.errors import ModelError, ModelFileError

__all__ = ["ChatTemplate", "ChatTemplateError", "ModelTokenizer"]

PathLike = Union[str, Path]


class ChatTemplateError(ModelError, ValueError):
    """The chat template is missing, does not parse, or raised while rendering (the message
    says which file and where)."""


def _token_text(value: Any) -> Optional[str]:
    """A special token of tokenizer_config.json: a string or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ChatTemplateError(f"{path}: not valid JSON: {e}") from None


class ChatTemplate:
    """A jinja2 chat template and the special tokens it may use.

    Args:
        source: the template text (or ``{name: text}`` for named templates).
        special_tokens: names in scope while rendering (``bos_token``, ``eos_token``, ...).
        where: names the template's file in errors.
    """

    def __init__(self, source: Union[str, dict], *, special_tokens: Optional[dict] = None,
                 where: str = "chat template"):
        import jinja2
        import jinja2.sandbox

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
            return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                              separators=separators, sort_keys=sort_keys)

        env = jinja2.sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
        self.where = where
        self.special_tokens = dict(special_tokens or {})
        sources = source if isinstance(source, dict) else {"default": source}
        self._templates = {}
        for name, text in sources.items():
            try:
                self._templates[name] = env.from_string(text)
            except jinja2.exceptions.TemplateSyntaxError as e:
                raise ChatTemplateError(f"{where}: template {name!r} line {e.lineno}: "
                                        f"{e.message}") from None

    @classmethod
    def from_model_dir(cls, path: PathLike) -> "ChatTemplate":
        """The template of a model directory (``tokenizer_config.json`` or
        ``chat_template.jinja``).

        Raises:
            ModelFileError: neither holds a chat template.
            ChatTemplateError: the template does not parse.
        """
        directory = Path(path)
        config_path = directory / "tokenizer_config.json"
        config = _read_json(config_path) if config_path.exists() else {}
        if not isinstance(config, dict):
            raise ChatTemplateError(f"{config_path}: expected a JSON object")
        specials = {k: _token_text(v) for k, v in config.items()
                    if k.endswith("_token") and _token_text(v) is not None}
        source: Any = config.get("chat_template")
        where = str(config_path)
        jinja_path = directory / "chat_template.jinja"
        if jinja_path.exists():
            source, where = jinja_path.read_text(encoding="utf-8"), str(jinja_path)
        if isinstance(source, list):
            source = {t.get("name"): t.get("template") for t in source if isinstance(t, dict)}
        if not source:
            raise ModelFileError(f"{directory}: no chat template (tokenizer_config.json has no "
                                 "'chat_template' and there is no chat_template.jinja)")
        return cls(source, special_tokens=specials, where=where)

    def render(self, messages: Sequence[dict], *, tools: Optional[Sequence[dict]] = None,
               add_generation_prompt: bool = True, **kwargs: Any) -> str:
        """The prompt text for ``messages`` (and ``tools``), like transformers'
        ``apply_chat_template(..., tokenize=False)``.

        Args:
            messages: ``[{"role", "content", ...}]``.
            tools: OpenAI-style tool definitions, passed to the template as ``tools``.
            add_generation_prompt: end with the assistant turn's header.
            **kwargs: more template variables (e.g. ``enable_thinking``).

        Raises:
            ChatTemplateError: the template raised (``raise_exception``) or failed.
        """
        import jinja2

        name = "tool_use" if tools and "tool_use" in self._templates else "default"
        template = self._templates.get(name) or next(iter(self._templates.values()))
        try:
            return template.render(messages=list(messages), tools=list(tools) if tools else None,
                                   add_generation_prompt=add_generation_prompt,
                                   **self.special_tokens, **kwargs)
        except jinja2.exceptions.TemplateError as e:
            raise ChatTemplateError(f"{self.where}: {e}") from None
        except (TypeError, KeyError, AttributeError, ValueError) as e:
            raise ChatTemplateError(f"{self.where}: rendering failed: "
                                    f"{type(e).__name__}: {e}") from None


class ModelTokenizer:
    """A model's ``tokenizer.json`` (the ``tokenizers`` library): text to ids and back.

    Args:
        path: the ``tokenizer.json`` file.
    """

    def __init__(self, path: PathLike):
        try:
            import tokenizers
        except ImportError:
            raise ModelError("prompts of real models need the tokenizers package "
                             "(pip install 'xg2-jax[hf]')") from None
        self.path = Path(path)
        if not self.path.exists():
            raise ModelFileError(f"{self.path}: no such file")
        try:
            self._tok = tokenizers.Tokenizer.from_file(str(self.path))
        except Exception as e:  # noqa: BLE001 - the tokenizers library's own error types
            raise ModelError(f"{self.path}: not a readable tokenizer.json: {e}") from None

    @classmethod
    def from_model_dir(cls, path: PathLike) -> "ModelTokenizer":
        """The ``tokenizer.json`` of a model directory."""
        return cls(Path(path) / "tokenizer.json")

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without added special tokens (as transformers tokenizes a
        rendered chat template: the template writes BOS itself)."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """Text of ``ids`` (special tokens kept as their text by default)."""
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)
