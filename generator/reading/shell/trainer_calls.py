"""Which recorded commands call a Hydra entry point, through which launchers, and what each
override's value is and where it was written."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise

from generator.reading.launch_script import Hazard, Invocation, Override, Provenance, Source, Span
from generator.reading.overrides import looks_like_override, parse_override
from generator.reading.shell.model import Field, Group, Piece, as_text
from generator.reading.shell.context import CommandRecord
from generator.reading.shell.wrappers import Argv, find_entry
from generator.reading.shell.placeholders import LOGGER_NAME_KEYS, is_markup, is_placeholder, placeholder_word
from generator.reading.python.hydra_main import entry_config, reads_own_command_line
from generator.reading.shell.unset_names import environment_inputs, from_scheduler, near_miss
from generator.reading.shell.duplicates import duplicate_hazard
from generator.reading.shell.split_words import split_siblings, split_words_hazard
from generator.verl.constants import PPO_ENTRY

_RECIPE_MAIN = re.compile(r"recipe\.(?:[\w.]+\.)?\w*main\w*\Z")
# A module of verl or of a verl recipe, named as a launcher's first argument.
_RUN_MODULE = re.compile(r"(?:verl|recipe)(?:\.[A-Za-z_]\w*)+\Z")
_CONFIG_FLAGS = {"--config-path": "path", "-cp": "path", "--config-name": "name", "-cn": "name",
                 "--config-dir": "dir", "-cd": "dir"}


def recognise(rec: CommandRecord, line_of: Callable[[str | None, int], int],
              script_path: str | None = None) -> Invocation | None:
    """An Invocation when `rec` calls a Hydra entry point, else None. `script_path`: the file read
    (a command with no path of its own is written there)."""
    env = dict(rec.env)
    launcher: list[str] = []
    argv = Argv(rec.fields)
    found = find_entry(argv, launcher, env)
    if found is None:
        return None
    if found.launcher:
        launcher.append(found.launcher)
    entry, kind, i = found.entry, found.kind, found.next
    texts = argv.words_from(i)  # each word's text, made once for the whole command
    if texts and _RUN_MODULE.match(texts[0]) and entry != texts[0]:
        # `python tools/run_module.py verl.trainer.main_ppo k=v`, `-m pkg.launch verl.trainer.sft_trainer`:
        # a launcher that runs the module its first argument names (issue 34: such a call was read
        # as a call of the launcher, and the script told it had no trainer call)
        launcher.append(entry)
        entry, kind, i = texts[0], "module", i + 1
        texts = texts[1:]
    rest = rec.fields[i:]
    inv = Invocation(
        line=rec.span.line, span=rec.span, entry=entry, entry_kind=kind,  # type: ignore[arg-type]
        launcher=" ".join(launcher), config_path=None, config_name=None, branch=rec.branch,  # type: ignore[arg-type]
        passes_args=rec.passes_args, env=env, redirects=list(rec.redirects),
        context=list(rec.context), cwd=rec.cwd, pythonpath=rec.pythonpath, path=rec.path,
    )
    j = 0
    while j < len(rest):
        f = rest[j]
        text = texts[j]
        flag, eq, value = text.partition("=")
        if flag in _CONFIG_FLAGS:
            if not eq:
                value = texts[j + 1] if j + 1 < len(rest) else ""
                j += 1
            which = _CONFIG_FLAGS[flag]
            if which == "path":
                inv.config_path = value
            elif which == "name":
                inv.config_name = value
            else:
                inv.other_args.append(text if eq else f"{flag} {value}")
            j += 1
            continue
        if looks_like_override(text):
            inv.overrides.append(make_override(f, line_of, text, command_file=rec.path or script_path))
        else:
            inv.other_args.append(text)
        j += 1
    if not _is_hydra_entry(inv, rec.path):
        return None
    if rec.path is not None and inv.config_name is None and inv.config_path is None:
        entry_file = reads_own_command_line(inv.entry, rec.path)
        inv.own_command_line = str(entry_file) if entry_file is not None else None
    return inv


# Python tools whose `key=value` arguments are not Hydra overrides.
_NOT_HYDRA = {"pip", "venv", "ensurepip", "pytest", "http.server", "json.tool", "build", "twine", "uv"}


def _is_hydra_entry(inv: Invocation, script_path: str | None) -> bool:
    """verl's trainer or a recipe main by name; any entry given overrides or a config; else an
    entry whose module file, found beside the script or above it, is decorated `@hydra.main`."""
    if inv.entry_kind == "module" and inv.entry in _NOT_HYDRA:
        return False
    if inv.entry_kind == "module" and (inv.entry == PPO_ENTRY or _RECIPE_MAIN.match(inv.entry)):
        return True
    if inv.overrides or inv.config_name is not None or inv.config_path is not None:
        return True
    return script_path is not None and entry_config(inv.entry, script_path) is not None


def _value_after_equals(pieces: list[Piece]) -> tuple[list[Piece], Piece | None, int]:
    """(the value's pieces, the piece holding the first '=', byte offset just after '=', -1 when
    not written out); ([], None, -1) without '='."""
    for n, p in enumerate(pieces):
        k = p.text.find("=")
        if k < 0:
            continue
        tail_text = p.text[k + 1 :]
        after = (p.a + k + 1) if (p.exact and p.a is not None) else None
        value = [p.copy(text=tail_text, a=after)] if tail_text else []
        return value + pieces[n + 1 :], p, (after if after is not None else -1)
    return [], None, -1


def _exact(p: Piece) -> bool:
    return not p.unknown and p.a is not None and p.b is not None and (p.exact or p.q == "\\")


def _contiguous(value: list[Piece]) -> bool:
    """Pieces written side by side in one file (at most a closing and an opening quote, or a
    line continuation, between them), so one byte range holds the whole value."""
    for prev, nxt in pairwise(value):
        if prev.path != nxt.path or nxt.a < prev.b or nxt.a - prev.b > 2:  # type: ignore[operator]
            return False
    return True


def _value_provenance(f: Field, value: list[Piece], text: str, eq_piece: Piece | None, eq_end: int,
                      line_of: Callable[[str | None, int], int]) -> Provenance:
    """Where an override's value (`value`, whose text is `text`) comes from: the text after `=`,
    a variable's definition, a string or array variable, or nowhere known; with its span when
    one byte range holds it."""
    origin: Source | None = "array" if f.origin == "array" else "string" if f.origin == "string" else None
    if origin == "string":  # provenance inside the string variable, not the string itself
        value = [p.copy(group=p.inner) for p in value]
    if not value:
        return _empty_value_provenance(origin, eq_piece, eq_end, line_of)
    has_unknowns, plain = False, True  # plain: no expansion at all
    for p in value:
        has_unknowns = has_unknowns or bool(p.unknown)
        plain = plain and p.group is None and (p.exact or p.q == "\\")
    found = _definition_provenance(value, text, origin, has_unknowns, line_of)
    if found is not None:
        return found
    found = _written_provenance(value, origin or ("literal" if plain else "variable"), line_of)
    if found is not None:
        return found
    source = origin or ("unknown" if has_unknowns else ("literal" if plain else "variable"))
    return Provenance(source, None, path=f.path)


def _written_provenance(value: list[Piece], source: Source, line_of: Callable[[str | None, int], int]
                        ) -> Provenance | None:
    """The value's own bytes in one file, side by side, with the quotes around them: their span
    (None when the value is not written out in one place)."""
    for p in value:
        if not _exact(p):
            return None
    if not _contiguous(value):
        return None
    region, quoting = _region(value)
    if region is None:
        return None
    vpath = value[0].path
    return Provenance(source, Span(region[0], region[1], line_of(vpath, region[0])), quoting, path=vpath)


def _empty_value_provenance(origin: Source | None, eq_piece: Piece | None, eq_end: int,
                            line_of: Callable[[str | None, int], int]) -> Provenance:
    """An empty value (`key=`): the empty span right after `=` when the `=` was written out."""
    if eq_end >= 0 and eq_piece is not None:
        q = eq_piece.q if eq_piece.q in ("'", '"') else ""
        return Provenance(origin or "literal", Span(eq_end, eq_end, line_of(eq_piece.path, eq_end)), q,
                          path=eq_piece.path)
    return Provenance(origin or "literal", None)


def _definition_provenance(value: list[Piece], text: str, origin: Source | None, has_unknowns: bool,
                           line_of: Callable[[str | None, int], int]) -> Provenance | None:
    """The whole value is one variable's whole value: the span of that variable's definition
    (None when the value is anything else)."""
    g = value[0].group
    if g is None or not all(p.group is g for p in value) or g.text != text:
        return None
    span = (Span(g.span_start, g.span_end, line_of(g.path, g.span_start))
            if g.span_start is not None and g.span_end is not None else None)
    source = origin or ("unknown" if has_unknowns and span is None else "variable")
    return Provenance(source, span, g.quoting if span else "", variable=g.variable, path=g.path)


def _region(value: list[Piece]) -> tuple[tuple[int, int] | None, str]:
    first, last = value[0], value[-1]
    end_of_last = last.b if last.b is not None else last.a
    if (first.q in ("'", '"') and first.qa is not None and all(p.qa == first.qa for p in value)):
        return (first.a, end_of_last), first.q  # type: ignore[return-value]
    start = first.a
    if first.q in ("'", '"', "$'"):
        if first.qa is None or first.a is None or first.qa < first.a - (2 if first.q == "$'" else 1):
            return None, ""
        start = first.qa
    end = end_of_last
    if last.q in ("'", '"', "$'"):
        if last.qb is None or end is None or last.qb > end + 1:
            return None, ""
        end = last.qb
    if start is None or end is None:
        return None, ""
    return (start, end), ""


def make_override(f: Field, line_of: Callable[[str | None, int], int], text: str,
                  command_file: str | None = None) -> Override:
    """The override field `f` (whose text is `text`) makes. `command_file`: the file the command
    is written in, where an array element's own line is worth pointing at."""
    latin = text if text.isascii() else f.text  # as_text keeps ASCII text as it is
    if text.startswith("++"):
        op = "++"
    elif text.startswith("+"):
        op = "+"
    elif text.startswith("~"):
        op = "~"
    else:
        op = "="
    value_pieces, eq_piece, eq_end = _value_after_equals(f.pieces)
    has_value = eq_piece is not None
    # The first '=' of the field's text is the first '=' of its first piece that holds one.
    key_latin, _, value_latin = latin.partition("=")
    key_text = as_text(key_latin)[len(op) if op != "=" else 0 :]
    value = as_text(value_latin) if has_value else None
    if has_value:
        prov = _value_provenance(f, value_pieces, value_latin, eq_piece, eq_end, line_of)
    else:
        prov = Provenance(f.origin if f.origin in ("array", "string") else "literal", None)  # type: ignore[arg-type]
    at = f.cmd_a if f.cmd_a >= 0 else f.word_a  # where the word stands on the command line
    line = line_of(f.path if f.origin == "literal" else None, at)
    word = Span(f.word_a, f.word_b, line if f.origin == "literal" and at == f.word_a else line_of(f.path, f.word_a))
    element_line = None  # `"${ARR[@]}"`: the element's own line, in the same file as the command
    if f.origin == "array" and f.path in (command_file, None):
        element_line = word.line
    return Override(text=text, key=key_text, op=op, value=value, line=line, word=word,  # type: ignore[arg-type]
                    provenance=prov, unknowns=_unknowns(value_pieces),
                    placeholder_origins=_placeholder_origins(f, value_pieces), element_line=element_line)


def _unknowns(value: list[Piece]) -> tuple[str, ...]:
    """Why each unknown part of a value is unknown, once each, in order."""
    reasons: dict[str, None] = {}
    for p in value:
        if p.unknown:
            reasons[p.unknown] = None
    return tuple(reasons)


def _placeholder_origins(f: Field, value: list[Piece]) -> tuple[tuple[str | None, int], ...]:
    """Where the placeholder-looking parts of a value written outside the word `f` itself (a
    variable's definition) are written, once each, in order."""
    origins: dict[tuple[str | None, int], None] = {}
    for p in value:
        if p.a is not None and not p.unknown and not (p.path == f.path and f.word_a <= p.a < f.word_b) \
                and is_placeholder(p.text):
            origins[(p.path, p.a)] = None
    return tuple(origins)


# Options Hydra's own command line accepts besides overrides (hydra/_internal/utils.py get_args_parser).
_HYDRA_FLAGS = {"--help", "-h", "--hydra-help", "--version", "--cfg", "-c", "--resolve", "--package", "-p",
                "--run", "-r", "--multirun", "-m", "--shell-completion", "-sc", "--info", "-i", "--experimental-rerun"}
_HYDRA_FLAGS_WITH_VALUE = {"--cfg", "-c", "--package", "-p", "--info", "-i", "--experimental-rerun"}


def argument_hazards(rec: CommandRecord, inv: Invocation, line_of: Callable[[str | None, int], int]
                     ) -> list[Hazard]:
    """Words among a Hydra trainer's overrides that are not overrides: `key= value` and
    `key =value` (a space around `=` makes two words), a bare word or an unknown option."""
    rest = _hydra_override_words(rec, inv)
    if rest is None:
        return []
    texts = [as_text(f.text) for f in rest]
    out: list[Hazard] = []
    j = 0
    while j < len(rest):
        text, f = texts[j], rest[j]
        phrase = _placeholder_phrase(texts, j, rest)
        if phrase:  # `key=path to your model`: one finding for the phrase, not one per word
            out.extend(_phrase_hazards(rec, rest, texts, j, phrase, line_of))
            j += phrase
            continue
        flag_words = _hydra_flag_words(text)
        if flag_words:
            j += flag_words
            continue
        if f.unknowns or not text.strip():  # `\ ` words are the backslash-space hazard's
            j += 1
            continue
        split = split_siblings(rest, texts, j)
        if split > 1:  # `dir=ckpt/Your Exp name`: the stray words of one split word are one mistake
            f_line = line_of(rec.path, f.cmd_a if f.cmd_a >= 0 else f.word_a)
            out.append(split_words_hazard(texts[j : j + split], inv.line, f_line, _word_span(rec, f, f_line)))
            j += split
            continue
        hazard, words = _word_hazard(rec, inv, f, text, texts[j + 1] if j + 1 < len(rest) else None, line_of)
        if hazard is not None:
            out.append(hazard)
        j += words
    return out


def _hydra_override_words(rec: CommandRecord, inv: Invocation) -> list[Field] | None:
    """The words after a Hydra trainer's entry, or None for a call that is not one (or has none)."""
    if inv.own_command_line is not None:
        return None  # the project's entry parses its own command line: its words are not Hydra's
    if not inv.other_args or inv.entry_kind != "module" or not (
            inv.entry == PPO_ENTRY or _RECIPE_MAIN.match(inv.entry)):
        return None  # every trap here leaves a word that is not an override
    found = find_entry(Argv(rec.fields), [], {})
    if found is None:
        return None
    return rec.fields[found.next:]


def _word_span(rec: CommandRecord, f: Field, line: int) -> Span | None:
    """Where a word is written, when it is written literally in the call's own file."""
    return Span(f.word_a, f.word_b, line) if (f.path == rec.path and f.origin == "literal") else None


def _phrase_hazards(rec: CommandRecord, rest: list[Field], texts: list[str], j: int, phrase: int,
                    line_of: Callable[[str | None, int], int]) -> list[Hazard]:
    """The stray-argument findings of the unquoted placeholder phrase of `phrase` words at `j`."""
    f, text = rest[j], texts[j]
    line = line_of(rec.path, f.cmd_a if f.cmd_a >= 0 else f.word_a)
    span = _word_span(rec, f, line)
    words = " ".join(texts[j : j + phrase])
    # One finding per placeholder: `dir=$CKPT_PATH/$EXPERIMENT_NAME` holds two of them.
    groups: list[Group | None] = list({id(p.group): p.group for g in rest[j : j + phrase] for p in g.pieces
                   if p.group is not None and p.group.variable and p.group.span_start is not None
                   and _has_placeholder_words(p.group.text)}.values())
    out: list[Hazard] = []
    for group in groups or [None]:
        where = (f" (from ${group.variable}, line {line_of(group.path, group.span_start or 0)})"
                 if group is not None else "")
        out.append(Hazard(
            "stray-argument", line,
            f"`{words[:80]}`{where} is a placeholder left in the script, unquoted: bash splits it into "
            f"{phrase} words, so Hydra gets `{text[:60]}` and stops at the stray argument "
            f"`{texts[j + 1][:40]}`; fill in the real value", span))
    return out


def _hydra_flag_words(text: str) -> int:
    """How many words a Hydra or config option starting at `text` takes (its value too when
    written apart), or 0 when `text` is not one."""
    flag = text.split("=", 1)[0]
    if flag in _CONFIG_FLAGS or flag in _HYDRA_FLAGS:
        return 2 if ("=" not in text and (flag in _HYDRA_FLAGS_WITH_VALUE or flag in _CONFIG_FLAGS)) else 1
    return 0


def _word_hazard(rec: CommandRecord, inv: Invocation, f: Field, text: str, nxt: str | None,
                 line_of: Callable[[str | None, int], int]) -> tuple[Hazard | None, int]:
    """The finding on one word among the overrides (with the next one, `nxt`, for a split
    `key= value`), and how many words it covers."""
    line = line_of(rec.path, f.cmd_a if f.cmd_a >= 0 else f.word_a)
    span = _word_span(rec, f, line)
    if text.endswith("=") and looks_like_override(text) and nxt is not None and not looks_like_override(nxt):
        return Hazard("split-assignment", line,
                      f"`{text} {nxt}`: the space after `=` makes two words: Hydra sets {text[:-1]} to "
                      f"empty and then stops at the stray argument `{nxt}`; remove the space", span), 2
    if not looks_like_override(text) and nxt is not None and nxt.startswith("=") and len(nxt) > 1:
        return Hazard("split-assignment", line,
                      f"`{text} {nxt}`: the space before `=` makes two words, neither of them an "
                      "override Hydra accepts; remove the space", span), 2
    if not looks_like_override(text):
        what = "an option Hydra does not know" if text.startswith("-") else "a word that is not `key=value`"
        return Hazard("stray-argument", line,
                      f"`{text[:60]}` among the overrides of the call at line {inv.line} is {what}: "
                      "verl stops before training with a Hydra command-line error", span), 1
    return None, 1


def launcher_placeholder_hazards(rec: CommandRecord, inv: Invocation, line_of: Callable[[str | None, int], int]
                                 ) -> list[Hazard]:
    """Placeholders in the words before the entry (`ray job submit --address=http://xx.xx.xx.xx:8265`),
    in the call's --config-path/--config-dir, and in the call's own environment
    (`PYTHONPATH={the_path_of_your_verl} python3 …`)."""
    found = find_entry(Argv(rec.fields), [], {})
    if found is None:
        return []
    out: list[Hazard] = []
    for f in rec.fields[: found.next]:
        text = as_text(f.text)
        if f.unknowns or not is_placeholder(text.split("=", 1)[-1] if text.startswith("-") else text):
            continue
        line = line_of(rec.path, f.cmd_a if f.cmd_a >= 0 else f.word_a)
        span = Span(f.word_a, f.word_b, line) if (f.path == rec.path and f.origin == "literal") else None
        out.append(Hazard("placeholder-value", line,
                          f"`{text[:80]}` (before the trainer entry) is a placeholder left in the script: the "
                          "command receives the text itself; fill in the real value", span))
    for flag, value in (("--config-path", inv.config_path), ("--config-dir", _config_dir(inv))):
        if value and "<?" not in value and is_placeholder(value):
            out.append(Hazard("placeholder-value", rec.span.line,
                              f"{flag} {value[:80]} is a placeholder left in the script: Hydra looks for that "
                              "folder as written; fill in the real path", None))
    for name, value in rec.env.items():
        if "<?" not in value and is_placeholder(value):
            out.append(Hazard("placeholder-value", rec.span.line,
                              f"{name}={value[:80]} (the call's environment) is a placeholder left in the script; "
                              "fill in the real value", None))
    return out


def _named_after_its_variable(ov: Override) -> bool:
    """`REF_MODEL_PATH=ref_model_path`, `BASEDIR=base_dir`: a value that only repeats its
    variable's name (case and underscores aside) is one left for the user to fill in."""
    name, value = ov.provenance.variable, (ov.value or "").strip("'\"")
    if not name or ov.provenance.source != "variable" or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        return False
    # Two words at least (`ref_model_path`): `MODEL=model` may well be a folder named so.
    return "_" in value.strip("_") and value.replace("_", "").lower() == name.replace("_", "").lower()


def _has_placeholder_words(text: str) -> bool:
    words = text.split()
    return len(words) > 1 and (is_placeholder(text) or any(placeholder_word(w) for w in words))


def _config_dir(inv: Invocation) -> str | None:
    for arg in inv.other_args:
        for flag in ("--config-dir", "-cd"):
            if arg.startswith(flag + "=") or arg.startswith(flag + " "):
                return arg[len(flag) + 1 :]
    return None


def _placeholder_phrase(texts: list[str], j: int, fields: list[Field]) -> int:
    """How many words from `texts[j]` (an override) on make one unquoted placeholder phrase
    (`key=path`, `to`, `your`, `model`), or 0 when they do not. Words the reader does not
    know (an unknown variable's `<?…>`) are never part of one."""
    if not looks_like_override(texts[j]) or "=" not in texts[j] or fields[j].unknowns:
        return 0  # (`~key` has no value; a logger name split into words is a stray argument too)
    end = j + 1
    while end < len(texts) and texts[end].strip() and not looks_like_override(texts[end]) \
            and not texts[end].startswith("-") and not fields[end].unknowns:
        end += 1
    if end == j + 1:
        return 0
    value = texts[j].partition("=")[2]
    if is_placeholder(" ".join([value, *texts[j + 1 : end]])) or any(
            placeholder_word(w) for w in [value, *texts[j + 1 : end]]):
        return end - j
    return 0


def override_hazards(inv: Invocation, assigned: set[str], source: str | None = None,
                     source_path: str | None = None) -> list[Hazard]:
    """duplicate-key, empty-expansion, unset-in-value and placeholder hazards of one call;
    `source` is the text of the file the call is written in (`source_path`), where its comments are read."""
    out: list[Hazard] = []
    seen: dict[str, Override] = {}
    placeholders: dict[tuple[str | None, int], int] = {}  # where a reported placeholder is written -> its hazard
    # Where the logger labels' placeholder-looking text is written (`PROJECT=your_project_name`):
    # any text is a valid label, and the same text in a checkpoint path is only a folder name.
    labels = {o for ov in inv.overrides if ov.key in LOGGER_NAME_KEYS for o in ov.placeholder_origins}
    inputs = environment_inputs(inv, assigned)
    for ov in inv.overrides:
        if ov.op != "~" and ov.key:
            duplicate = duplicate_hazard(inv, ov, seen.get(ov.key), source, source_path)
            if duplicate is not None:
                out.append(duplicate)
            seen[ov.key] = ov
        if ov.value is not None and ov.unknowns:
            out.extend(_unset_hazards(ov, ov.value, assigned, inputs))
            if ov.placeholder_origins and _left_to_fill_in(ov):
                # `ROOT=/path/to/your/root` reaching `$ROOT/datasets/$1/train.parquet`: the part
                # the script wrote is a placeholder whatever the unknown part becomes
                _add_placeholder_hazard(ov, out, placeholders, labels)
        elif _left_to_fill_in(ov):
            _add_placeholder_hazard(ov, out, placeholders, labels)
    return out


def _unset_hazards(ov: Override, value: str, assigned: set[str], inputs: list[str]) -> list[Hazard]:
    """The findings on an override whose value (`value`) is built on variables the script never sets."""
    out: list[Hazard] = []
    m = re.fullmatch(r"<\?unset:([A-Za-z_][A-Za-z0-9_]*)>", value)
    if m and m.group(1) not in assigned and not from_scheduler(m.group(1)):
        name = m.group(1)
        meant = near_miss(name, assigned)
        hint = f" (did you mean ${meant}, which the script sets?)" if meant else ""
        if name in inputs and meant is None:
            # One of several settings the script takes from its caller (TinyZero's
            # `export N_GPUS=…; bash train.sh`): said, not warned about.
            return [Hazard(
                "env-in-value", ov.word.line,
                f"{ov.key}=${name}: the script takes {', '.join('$' + n for n in inputs)} from the "
                f"environment (set nowhere in it); a run without ${name} passes `{ov.key}=` (an empty string)",
                ov.provenance.span or ov.word)]
        out.append(Hazard(
            "empty-expansion", ov.word.line,
            f"${name} is never set in the script{hint}: unless the environment sets it, bash passes "
            f"`{ov.key}=` (an empty string)", ov.provenance.span or ov.word))
    partial = _partly_unset(value, assigned)
    if partial is not None:
        # An upper-case name is usually meant to come from the environment; a lower-case
        # one never set anywhere, or one a letter away from a name the script sets
        # (`$_EXP_NAME` for `$EXP_NAME`), is a forgotten or misspelt variable.
        meant = near_miss(partial, assigned)
        kind = "env-in-value" if (partial.isupper() or inputs) and meant is None else "unset-in-value"
        hint = f" (did you mean ${meant}, which the script sets?)" if meant else ""
        out.append(Hazard(
            kind, ov.word.line,
            f"{ov.key}={_UNSET_MARKER.sub(lambda m: '$' + m.group(1), value)}: ${partial} is never set "
            f"in the script{hint}; unless the environment sets it, "
            f"bash passes `{ov.key}={_without_markers(value)}` (${partial} as an empty string)",
            ov.provenance.span or ov.word))
    return out


def _left_to_fill_in(ov: Override) -> bool:
    """A value that looks like a placeholder the user was meant to replace (logger labels aside)."""
    return (ov.value is not None and ov.key not in LOGGER_NAME_KEYS and not is_markup(ov.value, ov.key)
            # an unknown part (`<?$1>`) is no blank of the script's own
            and (is_placeholder(_ANY_MARKER.sub("0", ov.value)) or _named_after_its_variable(ov))
            # one Hydra cannot parse is VK606's (an unknown part stands for a plain word here)
            and parse_override(_ANY_MARKER.sub("0", ov.text)).error is None)


_ANY_MARKER = re.compile(r"<\?[^<>]*>")


def _add_placeholder_hazard(ov: Override, out: list[Hazard], placeholders: dict[tuple[str | None, int], int],
                            labels: set[tuple[str | None, int]]) -> None:
    """Adds the placeholder-value finding of `ov` to `out`, or, when each placeholder it is built
    on was reported already, names `ov`'s key on that finding (`placeholders`: where a reported
    placeholder is written -> its finding's index in `out`)."""
    if ov.placeholder_origins and set(ov.placeholder_origins) <= labels:
        return  # only the logger labels (`…/$PROJECT/$EXPERIMENT`) look like placeholders: a folder name
    earlier = [placeholders[o] for o in ov.placeholder_origins if o in placeholders]
    if ov.placeholder_origins and len(earlier) == len(ov.placeholder_origins):
        # One variable's placeholder reaching a second key: one thing to fill in, one finding.
        first = out[earlier[0]]
        out[earlier[0]] = Hazard(first.kind, first.line,
                                 first.message + f" (it also reaches {ov.key} at line {ov.word.line})",
                                 first.span)
        return
    for origin in ov.placeholder_origins:
        placeholders[origin] = len(out)
    value = _ANY_MARKER.sub(_as_written, ov.value or "")
    out.append(Hazard(
        "placeholder-value", ov.word.line,
        f"{ov.key}={value} is a placeholder left in the script: verl receives the text "
        f"`{value}`; fill in the real value", ov.provenance.span or ov.word))


def _as_written(m: re.Match[str]) -> str:
    """An unknown part of a value as the script names it: `<?unset:X>` -> `$X`, `<?$2>` -> `$2`."""
    inner = m.group(0)[2:-1]
    if inner.startswith("unset:"):
        return "$" + inner[len("unset:"):]
    return inner if inner.startswith("$") else "..."


_UNSET_MARKER = re.compile(r"<\?unset:([A-Za-z_][A-Za-z0-9_]*)>")


def _partly_unset(value: str, assigned: set[str]) -> str | None:
    """The name of a never-assigned variable a value is partly built from (`$CKPT_DIR/run1`)."""
    if not _without_markers(value).strip("/'\"") or "<?" in _without_markers(value):
        return None  # wholly unknown (empty-expansion's case) or other unknowns in it
    for m in _UNSET_MARKER.finditer(value):
        if m.group(1) not in assigned and not from_scheduler(m.group(1)):
            return m.group(1)
    return None


def _without_markers(value: str) -> str:
    return _UNSET_MARKER.sub("", value)


def orphan_hazard(rec: CommandRecord) -> Hazard | None:
    """A command made of override-looking words: the tail of a call that bash cut off."""
    texts = [as_text(f.text) for f in rec.fields]
    if not texts or not looks_like_override(texts[0]):
        return None
    key = texts[0].lstrip("+~").split("=", 1)[0]
    if "." not in key:
        return None
    n_over = sum(1 for t in texts if looks_like_override(t))
    if n_over * 2 < len(texts):
        return None
    return Hazard(
        "orphan-overrides", rec.span.line,
        f"line {rec.span.line} runs `{texts[0][:60]}` as a command ({n_over} override-looking words): "
        "they were cut off from the call above, which never receives them (bash: command not found)",
        rec.span)
