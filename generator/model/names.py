"""The model's own name in what a user typed: the one reading the registry's matching
(generator.model.registry) and the suggestions for an unknown name (generator.model.suggest) share."""

from __future__ import annotations

import re

_HF_CACHE_DIR = re.compile(r"^models--[^-]+(?:-[^-]+)*?--")  # models--Qwen--Qwen2-7B


def base_name(name: str) -> str:
    """The last path component, lower-case, without a Hugging Face cache folder's `models--Org--`
    prefix."""
    return _HF_CACHE_DIR.sub("", name.strip().rstrip("/").replace("\\", "/").split("/")[-1].lower())
