"""What `gen show FILE` prints: each trainer call's overrides with where every value was written,
and the shell hazards, as a JSON-ready dict per file and as text."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO

from generator.base.safe_text import json_text, markup, one_line, printable
from generator.base.safe_text import styled as markup_styled

if TYPE_CHECKING:
    from generator.reading.launch_script import Hazard, Invocation, LaunchScript, Span


def _span(span: Span | None) -> dict[str, int] | None:
    return None if span is None else {"start": span.start, "end": span.end, "line": span.line}


def _hazard_dict(h: Hazard) -> dict[str, object]:
    return {"line": h.line, "kind": h.kind, "message": h.message, "span": _span(h.span)}


def _invocation_hazards(inv: Invocation, script: LaunchScript) -> list[Hazard]:
    """The file's hazards that concern this call: on its lines, at one of its words, or just
    after it (a comment or a stray backslash that cut it short, the orphaned rest)."""
    first = inv.span.line
    last = script.line_of(inv.span.end) if hasattr(script, "line_of") else first
    lines = {ov.word.line for ov in inv.overrides} | {ov.line for ov in inv.overrides}
    return [h for h in script.hazards if first <= h.line <= last + 2 or h.line in lines]


def script_dict(path: str, script: LaunchScript) -> dict[str, object]:
    invocations = []
    for inv in script.invocations:
        invocations.append({
            "line": inv.line,
            "entry": inv.entry,
            "entry_kind": inv.entry_kind,
            "launcher": inv.launcher,
            "config_path": inv.config_path,
            "config_name": inv.config_name,
            "branch": inv.branch,
            "context": list(inv.context),
            "passes_args": inv.passes_args,
            "env": dict(inv.env),
            "redirects": list(inv.redirects),
            "other_args": list(inv.other_args),
            "overrides": [
                {
                    "key": ov.key,
                    "op": ov.op,
                    "value": ov.value,
                    "text": ov.text,
                    "line": ov.line,
                    "source": ov.provenance.source,
                    "variable": ov.provenance.variable,
                    "span": _span(ov.provenance.span),
                    # the file holding `span` when it is not this script (a sourced file)
                    "span_path": ov.provenance.path if ov.provenance.path not in (None, script.path) else None,
                    "quoting": ov.provenance.quoting,
                    "resolved": ov.resolved,
                    "unknowns": list(ov.unknowns),
                }
                for ov in inv.overrides
            ],
            "hazards": [_hazard_dict(h) for h in _invocation_hazards(inv, script)],
        })
    return {
        "path": path,
        "error": None,
        "invocations": invocations,
        "hazards": [_hazard_dict(h) for h in script.hazards],
        "assumed_env": dict(script.assumed_env),
        "assumed_args": list(script.assumed_args),
    }


def error_dict(path: str, message: str) -> dict[str, object]:
    return {"path": path, "error": message, "invocations": [], "hazards": []}


class _Text:
    """How `gen show` writes user text: with rich markup and colour for a colour terminal, else
    plain (no escape codes at all: NO_COLOR, pipes, files)."""

    def __init__(self, colour: bool) -> None:
        self.colour = colour
        self.bracket = "\\[" if colour else "["

    def escape(self, text: str) -> str:  # user-written text: no markup, no control characters
        return markup(one_line(text)) if self.colour else one_line(text)

    def styled(self, style: str, text: str) -> str:
        return markup_styled(style, text) if self.colour else text


def render_scripts_text(files: list[dict[str, Any]], stream: TextIO) -> None:
    from generator.base.safe_text import use_color

    # No escape codes at all unless a colour terminal asked for them (NO_COLOR, pipes, files);
    # then the text is written as it is, without rich: no markup to parse, no ":name:" emoji
    # codes in user text turned into pictures, and a 20,000-override script shows in a second.
    colour = use_color(stream)
    text = _Text(colour)
    lines: list[str] = []
    for n, f in enumerate(files):
        if n:
            lines.append("")
        if f["error"]:
            continue
        lines.append(text.styled("bold", text.escape(f["path"])))
        if not f["invocations"]:
            lines.append("  no Hydra entry-point call found")
        for inv in f["invocations"]:
            lines.extend(_invocation_lines(inv, text))
        for hz in f["hazards"]:
            lines.append(f"  {text.styled('red', '! line ' + str(hz['line']) + ' ' + text.escape(hz['kind']) + ':')} "
                         f"{text.escape(hz['message'])}")
    if not lines:
        return
    if colour:
        from rich.console import Console

        Console(file=stream, highlight=False, soft_wrap=True).print("\n".join(lines))
    else:
        stream.write(printable("\n".join(lines) + "\n"))


def _invocation_lines(inv: dict[str, Any], text: _Text) -> list[str]:
    """One call: its line, launcher and entry, where it runs, then each override and other argument."""
    escape, styled = text.escape, text.styled
    extras = []
    if inv["config_name"]:
        extras.append(f"--config-name {inv['config_name']}")
    if inv["config_path"]:
        extras.append(f"--config-path {inv['config_path']}")
    branch = "" if inv["branch"] == "live" else " " + styled("yellow", f"({inv['branch']})")
    lines = [f"  line {inv['line']}: {styled('cyan', escape(inv['launcher']) + ' ' + escape(inv['entry']))}"
             f"{(' ' + escape(' '.join(extras))) if extras else ''}{branch}"]
    if inv["context"]:
        lines.append("    " + styled("dim", escape(" / ".join(inv["context"]))))
    if inv["passes_args"]:
        lines.append("    " + styled("dim", "passes the script's arguments on (\"$@\"): a run can override anything"))
    width = max((len(str(o["line"])) for o in inv["overrides"]), default=1)
    for ov in inv["overrides"]:
        lines.extend(_override_lines(ov, width, text))
    for other in inv["other_args"]:
        lines.append(f"    {' ' * width}  {styled('dim', 'arg ' + escape(other))}")
    return lines


def _override_lines(ov: dict[str, Any], width: int, text: _Text) -> list[str]:
    """One override: its line, the text as read, where its value comes from, and what is unknown."""
    escape, styled = text.escape, text.styled
    prefix = "" if ov["op"] == "=" else ov["op"]
    value = "" if ov["value"] is None else ov["value"]
    shown = f"{prefix}{ov['key']}" + ("" if ov["value"] is None else f"={value}")
    tag = ov["source"] + (f" ${ov['variable']}" if ov["variable"] and ov["source"] != "literal" else "")
    where = ov["span"]
    if ov["span_path"] and where is not None:
        tag += f", set at {os.path.basename(ov['span_path'])}:{where['line']}"
    elif where is not None and where["line"] != ov["line"]:
        tag += f", set at line {where['line']}"  # where a fix would edit the value
    style = "yellow" if not ov["resolved"] else ""
    body = styled(style, escape(shown)) if style else escape(shown)
    lines = [f"    {str(ov['line']).rjust(width)}  {body}  {styled('dim', text.bracket + escape(tag) + ']')}"]
    for why in ov["unknowns"]:
        lines.append(f"    {' ' * width}    {styled('yellow', '? ' + escape(why))}")
    return lines


# --- gen show --resolved ---------------------------------------------------------------------


def nest(values: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested mappings (`a.b.c: 1` → `{a: {b: {c: 1}}}`); a key that is both a
    value and a prefix of others keeps its dotted rest at the deepest mapping it reaches."""
    root: dict[str, Any] = {}
    for key in sorted(values):
        node, parts = root, key.split(".")
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                node[".".join(parts[depth:])] = values[key]
                break
            node = child
        else:
            if isinstance(node.get(parts[-1]), dict):
                node[parts[-1]]["_value"] = values[key]
            else:
                node[parts[-1]] = values[key]
    return root


def _plain(value: Any) -> Any:
    """Something YAML and JSON can write: containers kept, other objects as their text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _call_config(call: dict[str, Any]) -> dict[str, Any]:
    values = dict(call["config"])
    for key, why in call["unknown"].items():
        values[key] = f"<unknown: {why}>"
    return nest(_plain(values))


def resolved_document(files: list[dict[str, Any]], output_format: str) -> str:
    """`gen show --resolved --format json|yaml`: each call's config as a nested mapping."""
    from generator.report.documents import JSON_SCHEMA_VERSION

    document = {"schema_version": JSON_SCHEMA_VERSION, "files": [
        {"path": f["path"], "error": f["error"], "calls": [
            {k: v for k, v in call.items() if k not in ("config", "unknown")} | {"config": _call_config(call)}
            for call in f["calls"]]} for f in files]}
    if output_format == "json":
        return json_text(document, ascii_only=False)
    return printable(_yaml(document))


def _yaml(data: object) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)


def resolved_text(files: list[dict[str, Any]]) -> str:
    """The composed config of each call as YAML under a comment naming the call and its release."""
    out = []
    for f in files:
        if f["error"]:
            continue
        if not f["calls"]:
            out.append(f"# {f['path']}: no trainer call found\n")
        for call in f["calls"]:
            out.append(f"# {f['path']}:{call['line']}: {call['entry']} ({call['config_name']}, "
                       f"verl {call['verl_version']}; {call['config_source']})\n")
            out.append(_yaml(_call_config(call)))
    return printable("".join(out))
