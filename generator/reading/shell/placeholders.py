"""What a value left for the user to fill in looks like: one home for the shapes, used for
override values, launcher options and runs of stray words.

Names (`TO_BE_FILLED`, `your_model`, `<path_to_model>`, `xxx`, `path_to_base_model`, a shouted
`YOUR HOME DIR`, a quoted phrase `Your Checkpoint Directory`), paths (`/path/to/your/…`, `PATH/TO/…`,
`/data/Your_custom_data.parquet`, a middle elided as `/.../`), hosts (`xx.xx.xx.xx`,
`http://xx.xx.xx.xx:8265`), templates (`{the_path_of_your_verl}`, `{…your…}`) and choices (`TASK_NAME_YOU_SELECT`). A logger's project or experiment name is
only a label (`Your_project_name` trains fine and files the run under that name), so it is
never a placeholder finding.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The whole value is a placeholder word.
_WHOLE = re.compile(r"(?i)(?:to_?be_?filled|todo|fixme|x{3,}|<[^<>=]+>|your_\w+|\w+_here|changeme|replace_?me"
                    r"|path_to_\w+"  # path_to_base_model
                    r"|your(?:\s+[^\s/=]+){1,5})\Z")  # "Your Checkpoint Directory", quoted
# A placeholder somewhere in the value.
_PART = re.compile(
    r"(?i:(?:^|[\s/=:'\"])/?path/to/)"                 # /path/to/your/model, PATH/TO/data
    r"|(?i:\{[^{}$]*\byour[^{}]*\})"                   # {the_path_of_your_verl}, {your model}
    r"|(?i:\{[^{}$]*_your_[^{}]*\})"
    r"|(?i:(?:^|[^\w.])x{2,3}(?:\.x{1,3}){3}(?![\w.]))"  # xx.xx.xx.xx (host), in a URL too
    r"|(?:_YOU_SELECT\b|\bYOU_SELECT\b)"               # TASK_NAME_YOU_SELECT
    r"|(?i:(?:^|/)your[_-]?\w*/)"                      # /data/your_dataset/train.parquet
    r"|(?i:/your[_-]\w+\.\w+\Z)"                        # /data/Your_custom_Training_data.parquet
    r"|(?:(?:^|[\s=:'\"/])\.\.\./)"                        # /.../proj/reward.py: a path with its middle elided
    # <your_path_to_ARPO>/scripts/config, --model=<model>, <HOST>:8000: a word, path part or host of its own, not a
    # tag inside a structured value (`<search>:0,0,255;</search>:…`, a tag:colour table)
    r"|(?:(?:^|[\s/='\"@:])<[A-Za-z_][\w .-]*>(?=$|[/\s'\"._-]|:\d+(?:[/\s'\"]|$)))"  # <HOST_IP>:8000 too
    r"|(?:(?:^|[\s/\['\"])YOUR[ _]+[A-Z])"            # YOUR HOME DIR/data, ['YOUR SFT_MODEL_PATH']
)
# Logger labels: any text is a valid name.
LOGGER_NAME_KEYS = frozenset({"trainer.project_name", "trainer.experiment_name"})


# The same few values come back override after override and script after script (75,417
# calls over the 892 shared scripts, 1,464 distinct values), and the search of _PART tries
# every alternative at every character: remembered by value, a bounded number of them.
# Markup, not a blank to fill in: a closing tag (`</answer>`), a special token (`<|im_end|>`), or
# tags only (`<think>`, `<search>,<answer>`) where the key names markup (issue 34: a tag in a
# stop-token or format key was reported as a placeholder).
_TAGS = re.compile(r"(?:\s*,?\s*(?:</?[A-Za-z_][\w-]*>|<\|[^<>|]*\|>))+\s*")
_SURELY_MARKUP = re.compile(r"</[A-Za-z_][\w-]*>|<\|[^<>|]*\|>")
_MARKUP_KEY = re.compile(r"(?i)(?:tag|token|stop|template|marker|pattern|delim|colou?r|format|prefix|suffix"
                         r"|sep|start|end|think|answer)")


def is_markup(value: str, key: str | None = None) -> bool:
    """Whether `value` is tags or special tokens rather than a placeholder: always when it holds a
    closing tag or a special token; a bare `<word>` only where the key (its last part) names markup."""
    text = value.strip().strip("'\"")
    if not text or not _TAGS.fullmatch(text) or re.search(r"(?i)your|path", text):
        return False  # `<your_path>`: a blank whatever the key
    if _SURELY_MARKUP.search(text):
        return True
    return key is not None and _MARKUP_KEY.search(key.rsplit(".", 1)[-1]) is not None


@lru_cache(maxsize=4096)
def is_placeholder(value: str) -> bool:
    """Whether `value` (quotes stripped) holds a placeholder shape."""
    text = value.strip().strip("'\"")
    if not text or is_markup(text):
        return False
    return _WHOLE.match(text) is not None or _PART.search(text) is not None


def placeholder_word(word: str) -> bool:
    """A word of an unquoted placeholder phrase (`path to your model`): `your`, `<…>`, `…>`."""
    lowered = word.lower().strip("'\"")
    return (lowered in _PHRASE_WORDS or lowered.startswith("<") or lowered.endswith(">")
            or is_placeholder(word))


# Words that mark a phrase as one left for the user (`THE PATH YOU WANT TO SAVE YOUR CKPT`,
# `MODIFIED YOURSELF e.g. …`).
_PHRASE_WORDS = frozenset({"your", "yours", "yourself", "you", "here", "<your", "your>", "todo", "fixme"})
