"""`gen recipe --from legacy.sh`: re-render a hand-written Megatron script in the clean form.

The legacy script is read statically (never run), its trainer call becomes a Config, the
rules' safe fixes correct the derived fields (mini/micro batches, token budgets, ...), and
the result becomes a RecipeSpec: the layout and batch keys the recipe model knows, plus
every other key the script set, kept verbatim. Values the reader could not know (an unset
$HOME, a `$(...)`) become knobs: environment references stay references, anything
computed at run time becomes a required knob with a comment saying what it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from generator.base.errors import InputError
from generator.reading.launch_script import UNKNOWN_CLOSE, UNKNOWN_OPEN
from generator.render.quoting import shell_word
from generator.render.recipe_settings import build_recipe
from generator.render.spec import AUTO_LAUNCHER, HydraText, RecipeSpec, schema_has
from generator.verl.constants import MEGATRON as M
from generator.verl.constants import PPO_MEGATRON_CONFIG

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.model.facts import ModelFacts


@dataclass(frozen=True, slots=True)
class Legacy:
    spec: RecipeSpec
    notes: list[str] = field(default_factory=list)


def _pieces(text: str) -> list[tuple[bool, str]]:
    """Split value text into (is_marker, text) pieces; a marker's text is its label."""
    out: list[tuple[bool, str]] = []
    rest = text
    while UNKNOWN_OPEN in rest:
        before, _, after = rest.partition(UNKNOWN_OPEN)
        label, _, rest = after.partition(UNKNOWN_CLOSE)
        if before:
            out.append((False, before))
        out.append((True, label))
    if rest:
        out.append((False, rest))
    return out


def _double_quoted(text: str) -> str:
    return "".join("\\" + ch if ch in '\\"$`' else ch for ch in text)


# Set in every login shell, so a reference to them never trips `set -u`.
ALWAYS_SET = ("HOME", "USER", "PWD", "PATH", "SHELL")


def _environment_reference(name: str) -> str:
    """`${VAR}` for a variable the shell always has; else `${VAR:?...}`: the generated script runs
    under `set -u`, and a variable the legacy script only read from the environment must stop
    the run with a message that names it, not with bash's bare "unbound variable"."""
    if name in ALWAYS_SET:
        return "${" + name + "}"
    return "${" + name + ":?set " + name + " (the legacy script read it from the environment)}"


def environment_text(hydra_text: str, key: str) -> HydraText:
    """Hydra text with `<?unset:VAR>` markers -> a knob default that references $VAR again
    (required unless the shell always sets it); any other unknown (command output, a script
    argument) -> a required knob."""
    pieces = _pieces(hydra_text)
    if all(not marker or label.startswith("unset:") for marker, label in pieces):
        shell = "".join(_environment_reference(label.split(":", 1)[1]) if marker else _double_quoted(piece)
                        for marker, piece in pieces for label in [piece])
        return HydraText(hydra_text, '"' + shell + '"', f"from the legacy script's {key}")
    shown = "".join(f"<{label}>" if marker else piece for marker, label in pieces for piece in [label])
    return HydraText(hydra_text, None, f"the legacy script computed {key} at run time ({shown})")


_SHARED_LAYOUT = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                  "expert_model_parallel_size", "expert_tensor_parallel_size",
                  "virtual_pipeline_model_parallel_size", "param_offload", "optimizer_offload")


def _follows_actor(config: Config, key: str) -> bool:
    for prefix in ("actor_rollout_ref.ref.megatron.", "critic.megatron."):
        if key.startswith(prefix) and key[len(prefix):] in _SHARED_LAYOUT:
            return config.values.get(key) == config.values.get(M + key[len(prefix):])
    return False


def _user_value(config: Config, key: str) -> str | HydraText | None:
    if key not in config.set_by:
        return None
    if not config.known(key):
        return environment_text(str(config.set_by[key].value), key)
    value = config.values.get(key)
    if isinstance(value, str):
        return value
    from generator.reading.overrides import format_value

    hydra = format_value(value)
    return HydraText(hydra, shell_word(hydra), f"kept from the legacy script's {key}")


def _apply_fixes(config: Config, model: ModelFacts, version: str, notes: list[str]) -> Config:
    """Correct derived fields the way `gen fix --unsafe` would: one error (then warning) fix per
    round, re-checked after each, because one fix (the mini batch) changes what the next
    (the micro batch) should be. Info-level findings are left alone."""
    from generator.config import config_from_overrides
    from generator.reading.overrides import format_value
    from generator.judging import check_config
    from generator.reading.edit_kinds import KeyEdit

    rank = {"error": 0, "warning": 1}
    for _round in range(8):
        fixable = [f for f in check_config(config, model=model)
                   if f.severity in rank and f.fix is not None
                   and any(isinstance(e, KeyEdit) for e in f.fix.edits)]
        if not fixable:
            return config
        finding = min(fixable, key=lambda f: rank[f.severity])
        fix = finding.fix
        assert fix is not None  # chosen among the findings with a fix
        edits = {e.key: e.new for e in fix.edits if isinstance(e, KeyEdit)}
        notes.append(f"{finding.code}: {fix.description}")
        words = [o.text for o in config.set_by.values() if o.key not in edits]
        words += [f"{key}={format_value(value)}" for key, value in edits.items()]
        fixed = config_from_overrides(words, version=version, config_name=PPO_MEGATRON_CONFIG)
        fixed.set_by = {**config.set_by, **{k: v for k, v in fixed.set_by.items() if k in edits}}
        for key, reason in config.unknown.items():
            if key not in edits:
                fixed.unknown.setdefault(key, reason)
        config = fixed
    return config


def spec_from_script(path: str, *, version: str, model: str | None = None, launcher: str = AUTO_LAUNCHER,
                     gpu: str | None = None, gpu_mem: float | None = None) -> Legacy:
    from generator.config import build_config
    from generator.config.reader import ConfigReader
    from generator.layout.hardware import gpu_spec
    from generator.model import model_slug, resolve_model
    from generator.script.extract import setup_from_config, trainer_call
    from generator.script.recognise import recognise_model
    from generator.render.recipe_settings import MEGATRON_ENV
    from generator.script.presteps import pre_steps_note
    from generator.reading.shell import read_launch

    try:
        script = read_launch(path)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    call = trainer_call(script)
    if call is None or not call.invocation.entry.endswith("main_ppo"):
        raise InputError(f"{path} has no verl.trainer.main_ppo call to re-render")
    notes: list[str] = []
    kept = {name: value for name, value, _why in MEGATRON_ENV}  # exported by the re-rendered script too
    listed = pre_steps_note(script.source.decode("utf-8", "replace"), call.invocation.line, kept)
    if listed:
        notes.append(listed)
    if call.live_calls > 1:
        notes.append(f"re-rendered the first of {call.live_calls} trainer calls (line {call.invocation.line})")
    config = build_config(call.invocation, version=version)
    if config.backend != "megatron":
        raise InputError(f"{path} does not use the Megatron backend (gen recipe renders Megatron scripts)")
    dropped = {issue.override.key for issue in config.key_issues}
    for issue in config.key_issues:
        notes.append(f"dropped {issue.override.text!r}: {issue.kind} in verl {version}")
    if model:
        facts = resolve_model(model)
    else:
        recognised = recognise_model(config, call.invocation, setup_from_config(config),
                                     script.source.decode("utf-8", "replace"))
        if recognised.model is None:
            raise InputError(f"cannot tell the model: {recognised.why}; pass --model")
        facts = recognised.model
        notes.append(f"model {facts.name}: recognised from {recognised.why}")
    config = _apply_fixes(config, facts, version, notes)
    setup = setup_from_config(config)
    gpus = ConfigReader(config).gpus
    if gpus is None:
        raise InputError("trainer.n_gpus_per_node and trainer.nnodes must be known numbers to re-render")
    device = gpu_spec(gpu, gpu_mem)
    if setup.algorithm is None:
        raise InputError(f"algorithm.adv_estimator={setup.estimator!r} is not one `gen recipe` renders "
                         "(grpo, gae, rloo, reinforce_plus_plus)")

    def given(value: int | None, default: int) -> int:
        return default if value is None else value  # unknown in the script: the recipe's default

    spec = RecipeSpec(
        model=facts, layout=setup.layout, gpus=gpus, nodes=given(setup.nodes, 1) or 1, gpu_name=device.name,
        gpu_memory_gib=device.memory_gib, algo=setup.algorithm, rollout=setup.rollout_name, launcher=launcher,
        version=version, model_path=_user_value(config, "actor_rollout_ref.model.path"),
        train_files=_user_value(config, "data.train_files"), val_files=_user_value(config, "data.val_files"),
        prompt_len=given(setup.prompt_len, 1024), response_len=given(setup.response_len, 1024),
        n=given(setup.n, 1), train_batch_size=given(setup.train_batch_size, 1024),
        ppo_mini_batch_size=given(setup.ppo_mini_batch_size, 256),
        project_name=_user_value(config, "trainer.project_name"),
        experiment_name=_user_value(config, "trainer.experiment_name"), model_slug=model_slug(facts),
        total_epochs=given(setup.total_epochs, 15), ppo_epochs=given(setup.ppo_epochs, 1),
    )
    # Everything else the script set explicitly is kept, in the script's order.
    recipe_values = {s.key: s.value for s in build_recipe(spec).settings}
    owned = set(recipe_values)
    extra: list[tuple[str, Any]] = []
    for key, override in config.set_by.items():
        if _follows_actor(config, key):
            continue  # the recipe writes the ref/critic layout from the actor's (one set of knobs)
        if key.endswith(".megatron.grad_offload"):
            notes.append(f"dropped {key}: verl never reads it (grad buffers follow param_offload)")
            continue
        if key in dropped or key in ("actor_rollout_ref.model.path", "data.train_files", "data.val_files",
                                     "trainer.project_name", "trainer.experiment_name"):
            continue
        value = environment_text(str(override.value), key) if not config.known(key) else config.values.get(key)
        # `+` exactly where the target release needs it: for a key its config does not have (a
        # `+` on a key it has is a Hydra error). A key the recipe writes too keeps the recipe's
        # own setting, and its `+`.
        prefix = "" if schema_has(version, key) else "+"
        if key in owned and not isinstance(value, HydraText) and recipe_values[key] == value:
            continue
        extra.append((prefix + key, value))
    header = [f"re-rendered from {path}"] + notes
    spec = replace(spec, extra_overrides=tuple(extra), notes=tuple(header))
    return Legacy(spec, notes)
