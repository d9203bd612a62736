"""VK6xx — override keys Hydra would refuse or that mean something else in this release
(from Config.key_issues, computed by generator.config), plus deprecated keys (A19)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from generator.reading.shell.placeholders import is_placeholder
from generator.rules.core import Context, Finding, Rule, Severity, Stage, family_rule, rule
from generator.config.reader import ConfigReader, fallback_note, is_trainer
from generator.config.types import Config, KeyIssue
from generator.schema.dataclass_fields import dataclass_fields, fields_release
from generator.verl.versions import VersionRange
from generator.verl.constants import PPO_ENTRY

if TYPE_CHECKING:
    from generator.schema.release_schema import Schema

_ANY = ("megatron", "fsdp", "unknown")
# Values with a dedicated rule elsewhere (reported once, there).
_DEDICATED_VALUES = {"actor_rollout_ref.rollout.mode"}


# Verdicts that depend on knowing the call's real config (not a fallback to the PPO defaults).
_NEEDS_OWN_CONFIG = {"unknown-key", "plus-on-existing", "delete-missing", "renamed", "removed"}


def _issues(the_rule: Rule, ctx: Context, kind: str) -> Iterator[Finding]:
    if kind in _NEEDS_OWN_CONFIG and fallback_note(ctx.config):
        return  # VK609 says once that keys could not be checked
    for issue in ctx.config.key_issues:
        if issue.kind != kind:
            continue
        if kind == "bad-value" and (issue.override.key in _DEDICATED_VALUES or not is_trainer(ctx)):
            continue  # value rules come from verl's PPO config classes
        if kind == "grammar" and _split_word_head(ctx, issue.override.line):
            continue  # the stray-argument finding on this line names the cause: one finding, not two
        severity: Severity | None = None
        message = _message(issue)
        if kind in ("renamed", "removed") and issue.override.op in ("+", "++"):
            # Hydra accepts adding the key. Whether anything reads it depends on where it lives
            # (an open mapping such as engine_kwargs.vllm is passed through to the engine).
            severity = "info"
            message += " (added with '+', so Hydra accepts it; make sure something still reads it)"
        yield the_rule.finding(message, line=issue.override.written_line, key=issue.override.key or None,
                               severity=severity)


def _split_word_head(ctx: Context, line: int | None) -> bool:
    """An override Hydra cannot parse on a line where the shell reader found a stray word after
    the overrides: bash split one word (`trainer.logger=${logger}` holding a space) and the head it
    left is what Hydra cannot parse (issue 34: reported twice for one cause)."""
    script = ctx.script
    if script is None or line is None:
        return False
    return any(h.kind == "stray-argument" and h.line == line for h in script.hazards)


def _message(issue: KeyIssue) -> str:
    text, key = issue.override.text, issue.override.key
    kind = issue.kind
    if kind == "unknown-key":
        hint = f"; did you mean {issue.suggestion}?" if issue.suggestion else ""
        return f"{key} is not a key of this config{hint}" + (f" ({issue.detail})" if issue.detail else "")
    if kind == "plus-on-existing":
        return f"'{text}': +{key} adds a key, but {key} already has a value; drop the '+' (or use '++')"
    if kind == "delete-missing":
        return f"'{text}': ~{key} deletes a key that does not exist"
    if kind == "renamed":
        return f"{key} was renamed" + (f" to {issue.suggestion}" if issue.suggestion else "") + \
            (f" ({issue.detail})" if issue.detail else "") + "; gen migrate rewrites it"
    if kind == "removed":
        return f"{key} was removed" + (f" ({issue.detail})" if issue.detail else "")
    if kind == "grammar":
        return f"Hydra cannot parse '{text}'" + (f": {issue.detail}" if issue.detail else "")
    if kind == "bad-value":
        return f"'{text}': {issue.detail or 'value not allowed'}"
    return f"'{text}': {issue.detail or kind}"


def _key_issue_findings(the_rule: Rule, ctx: Context) -> Iterator[Finding]:
    yield from _issues(the_rule, ctx, the_rule.reports)


# One rule per kind of Config.key_issues (generator.config): (code, name, the kind it reports, stage).
_KEY_ISSUE_RULES: tuple[tuple[str, str, str, Stage], ...] = (
    ("VK601", "unknown-key", "unknown-key", "load"),
    ("VK602", "plus-on-existing-key", "plus-on-existing", "load"),
    ("VK603", "delete-missing-key", "delete-missing", "load"),
    ("VK604", "renamed-key", "renamed", "load"),
    ("VK605", "removed-key", "removed", "load"),
    ("VK606", "override-grammar", "grammar", "load"),
    ("VK607", "bad-value", "bad-value", "init"),
)
for _code, _name, _kind, _stage in _KEY_ISSUE_RULES:
    family_rule(_key_issue_findings, _code, _name, severity="error", stage=_stage, reports=_kind, verl_ref="§3",
                backends=_ANY, scope="any")


@rule("VK608", "deprecated-val-batch-size", severity="warning", stage="load", verl_ref="A19", backends=_ANY,
      scope="any")
def val_batch_size(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.explicit("data.val_batch_size") and view.is_set("data.val_batch_size"):
        code = ctx.fork_code
        if code is not None and code.reads("data.val_batch_size"):
            return  # the fork's trainer still batches validation by it: live there, not deprecated
        yield val_batch_size.finding(f"data.val_batch_size={view.raw('data.val_batch_size')} is deprecated",
                                     line=view.line("data.val_batch_size"), key="data.val_batch_size")


@rule("VK609", "keys-not-checked", severity="info", stage="static", verl_ref="§3", backends=_ANY, scope="any")
def keys_not_checked(ctx: Context) -> Iterator[Finding]:
    note = fallback_note(ctx.config)
    if note:
        line = ctx.invocation.line if ctx.invocation else None
        yield keys_not_checked.finding(f"cannot decide key existence or rely on defaults: {note}", line=line)


# The sections a call builds as dataclasses: the `_target_` nodes verl's code passes to
# omega_conf_to_dataclass on the worker path the call takes (legacy workers or the new engine's),
# read from verl's source per release (generator/data/dataclass_fields.json, "_built_*"); the
# nested `_target_` nodes below them are built with them. A role's sections only when it is used.


def _built_sections(config: Config, view: ConfigReader, built: frozenset[str]) -> list[str]:
    """The call's `_target_` nodes that its worker path builds (found in its config, not listed)."""
    nodes = sorted(key[: -len("._target_")] for key in config.values if key.endswith("._target_"))
    roots: list[str] = []
    for node in nodes:
        if not any(node == chain or node.endswith("." + chain) for chain in built):
            continue
        role = node.split(".", 1)[0]
        if role == "critic" and view.critic_used is not True:
            continue
        if role == "reward_model" and view.raw("reward_model.enable") is not True:
            continue
        roots.append(node)
    return roots


def _existing(ctx: Context) -> frozenset[str] | None:
    """Leaves and inner nodes of the call's config before any override (None: not known)."""
    # The config the overrides were applied to: with the call's group selections composed in
    # (`model_engine=megatron` makes actor.megatron a field, not an added key).
    defaults = ctx.config.defaults
    if defaults is None:
        if ctx.schema is None:  # an unknown schema id: fall back to what the overrides tell
            return None
        defaults = ctx.schema.configs.get(ctx.config.schema)
    if defaults is None:
        return None
    nodes = _release_nodes(ctx.schema, defaults)
    if nodes is not None:
        return frozenset(defaults) | nodes
    found: set[str] = set()
    for key in defaults:
        found.add(key)
        cut = key.rfind(".")
        while cut > 0 and key[:cut] not in found:
            found.add(key[:cut])
            cut = key.rfind(".", 0, cut)
    return frozenset(found)


def _release_nodes(schema: Schema | None, defaults: dict[str, Any]) -> frozenset[str] | None:
    """The inner nodes of `defaults` when it is one of the release's own configs (a call without
    group selections), which the release keeps; None for any other dict (walked instead)."""
    if schema is None:  # an unknown schema id: the caller walks the keys
        return None
    return next((schema.nodes(name) for name, values in schema.configs.items() if values is defaults), None)


def _existed_without_plus(config: Config, node: str) -> bool:
    """Whether `node` is in the config other than through a '+'/'++' override ('=' only sets
    keys that exist, so anything else came from the defaults)."""
    prefix = node + "."
    for key in config.values:
        if key == node or key.startswith(prefix):
            source = config.set_by.get(key)
            if source is None or source.op not in ("+", "++"):
                return True
    return False


def _engine_group(config: Config) -> str:
    """The engine the call selects: a `model_engine=...` group selection (which the packaged
    defaults may not know, so it can sit among the key issues), else the config's backend."""
    chosen = config.values.get("model_engine")
    if not chosen:
        for issue in config.key_issues:
            if issue.override.key == "model_engine" and "=" in issue.override.text:
                chosen = issue.override.text.split("=", 1)[1].strip("'\" ")
    return str(chosen or config.backend)


def _other_engine(class_name: str, backend: str) -> bool:
    """An FSDP class judged for a Megatron call, or the other way round."""
    fsdp = backend in ("fsdp", "fsdp2", "dp", "unknown")
    return (not fsdp and class_name.startswith("FSDP")) or (backend != "megatron" and class_name.startswith("Mcore"))


@rule("VK610", "added-key-in-dataclass-section", severity="error", stage="load", versions=VersionRange("0.6.0",
      None), verl_ref="§3", backends=_ANY)
def added_key_in_dataclass(ctx: Context) -> Iterator[Finding]:
    config = ctx.config
    if fallback_note(config) or not is_trainer(ctx):
        return
    plus = [o for o in config.set_by.values() if o.op in ("+", "++") and o.key and "<?" not in o.key
            and not o.key.endswith("._target_")]
    if not plus:
        return  # most calls add no key: the sections they build (and the 110 KB of fields) need not be read
    view = ConfigReader.of(ctx)
    measured = fields_release(ctx.version)
    fields_of = dataclass_fields().get(measured, {}) if measured else {}
    built = fields_of.get("_built_engine" if view.new_engine else "_built_legacy", frozenset())
    roots = _built_sections(config, view, built)
    added = {id(o): o for o in plus if any(o.key.startswith(root + ".") for root in roots)}
    if not added:
        return
    existing = _existing(ctx)
    engine_group = _engine_group(config)
    package = config.resolution.package if config.resolution is not None else None
    for override in sorted(added.values(), key=lambda o: o.line):
        unknown = _unknown_field(override.key, config, existing, roots, fields_of, engine_group, ctx.fork_dataclasses)
        if unknown is None:
            continue
        parent, new_field, class_name, own = unknown
        removal = ctx.fork_code.removal_of(new_field) if ctx.fork_code is not None else None
        if removal is not None:
            # the fork's code takes its own field out of the section before the class is built
            yield added_key_in_dataclass.finding(
                f"'{override.text}' adds '{new_field}' to {parent}, which verl {ctx.version} builds as "
                f"{class_name}, a dataclass without that field; this project's code removes "
                + (f"fields named '{removal.name}*'" if removal.prefix else f"'{removal.name}'")
                + f" from the config before that ({removal.where}), so the call is not failed by it",
                line=override.written_line, key=override.key, severity="info")
            continue
        exact = own or measured == ctx.version
        guessed = config.resolution is not None and config.resolution.inferred and not own
        yield added_key_in_dataclass.finding(
            f"'{override.text}' adds '{new_field}' to {parent}, which verl {ctx.version} builds as "
            f"{class_name} (from its _target_), a dataclass without that field: the call fails when it is built "
            f"(unexpected keyword argument '{new_field}')"
            + (f" (fields read from the project's own {class_name} in {package})" if own and package is not None
               else "" if exact else f" (fields read from verl {measured}'s source)")
            + (" (the release was inferred from the script's keys; name it with --verl-version)" if guessed else ""),
            line=override.written_line, key=override.key, severity=None if exact and not guessed else "warning",
            stage=None if _built_at_load(parent) else "init")


def _unknown_field(key: str, config: Config, existing: frozenset[str] | None, roots: list[str],
                   fields_of: dict[str, frozenset[str]], engine_group: str,
                   fork_dataclasses: Mapping[str, frozenset[str]] | None) -> tuple[str, str, str, bool] | None:
    """(section, new field, dataclass, whether its fields are the project's own) when a '+' key
    adds a field the dataclass verl builds that section as does not have; None when it is an
    existing key, lands outside the built sections, under a class that is another engine's or not
    a dataclass at that release, or is a field. The project's own verl, where it defines the class,
    gives its fields (a fork adds its own, issue 34; read by the gatherer into
    `fork_dataclasses`, target -> fields); else verl's."""
    if (key in existing) if existing is not None else False:
        return None  # '++' on an existing field just sets it
    # the deepest node that existed before: the first new key is added right under it
    parts = key.split(".")
    parent = None
    for cut in range(len(parts) - 1, 0, -1):
        node = ".".join(parts[:cut])
        if (node in existing) if existing is not None else _existed_without_plus(config, node):
            parent = node
            break
    if parent is None or not any(parent == r or parent.startswith(r + ".") for r in roots):
        return None
    target = config.values.get(parent + "._target_")
    if not isinstance(target, str) or not target:
        return None
    new_field = parts[len(parent.split("."))]
    class_name = target.rsplit(".", 1)[-1]
    if _other_engine(class_name, engine_group):
        return None  # the defaults are another engine's group (model_engine=...): not this call's class
    own = fork_dataclasses.get(target) if fork_dataclasses is not None else None
    fields = own if own is not None else fields_of.get(class_name)
    if fields is None:
        return None  # a class verl's source does not define as a dataclass at that release: not judged
    if new_field in fields:
        return None  # a field of the dataclass that verl's YAML leaves out: '+' is the way to set it
    return parent, new_field, class_name, own is not None


def _built_at_load(section: str) -> bool:
    """verl's validate_config builds the actor and critic dataclasses before any worker starts
    (verl/utils/config.py@v0.7.0 validate_config, lines 151 and 185: omega_conf_to_dataclass of both); the
    other sections (rollout, model, ref, ...) are built in the workers' __init__, after Ray starts."""
    return any(section == root or section.startswith(root + ".") for root in ("actor_rollout_ref.actor", "critic"))


@rule("VK611", "relative-config-path", severity="error", stage="load", verl_ref="§3", backends=_ANY, scope="any")
def relative_config_path(ctx: Context) -> Iterator[Finding]:
    found = ctx.config.relative_config_path
    if found is None:
        return
    path, status, where, sure = found
    if is_placeholder(path):
        return  # `<your_path_to_X>/config`: not relative once filled in; VS714 names the placeholder
    line = ctx.invocation.line if ctx.invocation is not None else None
    advice = f'write --config-path="$(pwd)/{path}" (from the folder it is relative to) or an absolute path'
    if status == "missing":
        unsure = "" if sure else f" (assuming {ctx.config.entry}'s file sits in its package folder; it was not seen)"
        yield relative_config_path.finding(
            f"--config-path {path} is relative, so Hydra looks in the entry module's folder, not your working "
            f"directory: {where} does not exist{unsure}; {advice}", line=line,
            severity=None if sure else "warning")
        return
    if status != "unknown" or ctx.config.entry != PPO_ENTRY:
        return
    parts = [p for p in path.removeprefix("file://").split("/") if p not in ("", ".")]
    if not parts or parts[0] == "config":
        return  # verl/trainer/config is verl's own config folder
    if ".." in parts:
        yield relative_config_path.finding(
            f"--config-path {path} is relative to verl/trainer/ of the verl that runs (Hydra's rule), not to your "
            f"working directory; it works only from a verl source checkout; {advice}", line=line,
            severity="warning")
        return
    yield relative_config_path.finding(
        f"--config-path {path} is relative, so Hydra looks for verl/trainer/{'/'.join(parts)} inside the installed "
        f"verl (only verl/trainer/config is there), not in your working directory; {advice}", line=line)
