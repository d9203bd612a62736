"""Runs INSIDE the oracle's verl environment (see tools/oracle/); never imported by verl-gen.

It sits alone in this folder because Python puts a script's folder first on sys.path: the
modules of tools/oracle/ must not shadow anything verl imports.

Protocol: JSON lines. The first line from the parent is
    {"op": "init", "model_dirs": [DIR, ...]}
(folders holding a config.json the parent wrote from verl-gen's model registry; the worker
adds a tiny tokenizer so that verl's HFModelConfig can load them offline). Then one request per
line:
    {"id": ..., "config_name": "ppo_megatron_trainer", "config_dir": null | ABS_DIR,
     "config_relative": null | PATH (a relative --config-path, as Hydra resolves it),
     "overrides": ["k=v", ...], "typed_unknowns": ["key", ...], "model_dir": DIR}
and one answer per request:
    {"id": ..., "verdict": "accept" | "reject" | "needs-vllm" | "undecided",
     "stage": null | "compose" | "validate", "message": str, "seconds": float}

What is reproduced is exactly what `verl.trainer.main_ppo` does before its first worker
starts. From 0.8.0 (engine workers only): Hydra compose, `auto_set_device`, `validate_config` with
verl's own `need_reference_policy`/`need_critic` (its actor, critic, ref and rollout micro-batch
checks), then resolving the config. Up to 0.7.x: Hydra compose of the packaged config (or the script's --config-path), resolving the
config (TaskRunner.run resolves it in place), the worker-class choice by strategy (which raises
for an unknown strategy), then `validate_config(cfg, use_reference_policy, use_critic)` with the
two flags computed the way main_ppo computes them. verl's messages are passed through as data.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

PROTOCOL_OUT = sys.stdout
# verl prints progress to stdout; the protocol owns the real stdout, everything else goes to stderr.
sys.stdout = sys.stderr

LEGACY_CHOICES = ("auto", "enable", "disable")
TRAINING_STRATEGIES = ("fsdp", "fsdp2", "megatron")


def packaged_config_dir() -> Path:
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("oracle worker: verl is not installed in this environment")
    return Path(list(spec.submodule_search_locations)[0]) / "trainer" / "config"


CONFIG_DIR = packaged_config_dir()
RELEASE = (0, 0, 0)
# verl's own custom configs add `file://verl/trainer/config` to Hydra's search path, relative to
# the working directory (a verl checkout). Running from site-packages makes that path name the
# installed release's configs.
os.chdir(CONFIG_DIR.parent.parent.parent)


def one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """The innermost explicit cause: Hydra wraps dataclass errors in InstantiationException."""
    for _ in range(10):
        inner = exc.__cause__
        if inner is None and type(exc).__name__ == "InstantiationException":
            inner = exc.__context__
        if inner is None:
            break
        exc = inner
    return f"{type(exc).__name__}: {one_line(exc)}"


def mentions_vllm(exc: BaseException) -> bool:
    while exc is not None:
        if isinstance(exc, ImportError) and "vllm" in str(exc).lower():
            return True
        if "vllm version" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
    return False


# ------------------------------------------------------------------------------- model folders


def ensure_tokenizer(model_dir: str) -> None:
    """A tiny word-level tokenizer, so tokenizer loading works offline without real weights.

    Token ids and vocabulary do not matter to config validation; the files only have to load."""
    import fcntl

    folder = Path(model_dir)
    with open(folder / ".tokenizer.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two workers start together: one writes, the other waits
        if not (folder / "tokenizer.json").exists():
            _write_tokenizer(folder)


def _write_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<s>",
                                        eos_token="</s>", pad_token="<pad>")
    tokenizer.save_pretrained(str(folder))


# ------------------------------------------------------------------------------------ compose


def cache_yaml_parsing() -> None:
    """Hydra re-reads and re-parses every YAML file of the defaults tree on each compose (about
    two thirds of a compose). Parse each file once (keyed by path, mtime and size) and build a
    fresh OmegaConf node from a copy of the parsed data each time: the same objects
    OmegaConf.load would build, so composition semantics are untouched."""
    import copy

    import yaml
    from omegaconf import OmegaConf
    from omegaconf._utils import get_yaml_loader

    original = OmegaConf.load
    parsed: dict[tuple[str, int, int], Any] = {}

    def load(file_: Any) -> Any:
        name = getattr(file_, "name", file_)
        if not isinstance(name, (str, Path)) or not os.path.isfile(name):
            return original(file_)
        stat = os.stat(name)
        key = (os.path.abspath(name), stat.st_mtime_ns, stat.st_size)
        if key not in parsed:
            if isinstance(file_, (str, Path)):
                with open(os.path.abspath(file_), encoding="utf-8") as handle:
                    parsed[key] = yaml.load(handle, Loader=get_yaml_loader())
            else:
                parsed[key] = yaml.load(file_, Loader=get_yaml_loader())
            if parsed[key] is not None and not isinstance(parsed[key], (list, dict, str)):
                obj = parsed.pop(key)
                raise OSError(f"Invalid loaded object type: {type(obj).__name__}")
        obj = parsed[key]
        return OmegaConf.create() if obj is None else OmegaConf.create(copy.deepcopy(obj))

    OmegaConf.load = staticmethod(load)  # type: ignore[method-assign]


def cache_interpolation_parsing() -> None:
    """OmegaConf parses every interpolation string (`${oc.select:...}`) with ANTLR each time a
    node is set, hundreds per compose. A parse tree depends only on its input text, so keep
    each one (errors are not cached: they raise again)."""
    import omegaconf._utils
    import omegaconf.base
    import omegaconf.grammar_parser
    import omegaconf.resolvers.oc

    original = omegaconf.grammar_parser.parse
    trees: dict[tuple[str, str, str], Any] = {}

    def parse(value: str, parser_rule: str = "configValue", lexer_mode: str = "DEFAULT_MODE") -> Any:
        key = (value, parser_rule, lexer_mode)
        tree = trees.get(key)
        if tree is None:
            tree = trees[key] = original(value, parser_rule, lexer_mode)
        return tree

    for module in (omegaconf.grammar_parser, omegaconf.base, omegaconf._utils, omegaconf.resolvers.oc):
        module.parse = parse  # type: ignore[attr-defined]


def cache_defaults_trees() -> None:
    """Building the defaults tree and merging its configs is the rest of a compose, and it
    depends only on the config name, the search path and the config-GROUP overrides (Hydra's own
    `repo.group_exists` classification, as in its Overrides). Reuse the tree and a copy of the
    merged config built once per config and set of group overrides; Hydra then applies the value
    overrides, sets struct mode and does its bookkeeping exactly as usual."""
    import copy

    import hydra._internal.config_loader_impl as loader
    from hydra._internal.defaults_list import DefaultsList, Overrides

    original_create = loader.create_defaults_list
    original_compose = loader.ConfigLoaderImpl._compose_config_from_defaults_list
    trees: dict[tuple[Any, ...], Any] = {}
    merged: dict[int, Any] = {}

    def create_defaults_list(repo: Any, config_name: Any, overrides_list: Any, prepend_hydra: bool,
                             skip_missing: bool) -> Any:
        overrides = Overrides(repo=repo, overrides_list=overrides_list)
        if overrides.deletions:
            return original_create(repo, config_name, overrides_list, prepend_hydra, skip_missing)
        # The tree depends on the config-group overrides only (model_engine=megatron on every
        # 0.8+ Megatron call): key by their text, build it from them alone.
        groups = [o for o in overrides_list if repo.group_exists(o.key_or_group)]
        key = (config_name, prepend_hydra, skip_missing, tuple(str(o.input_line or o) for o in groups),
               tuple((source.provider, source.path) for source in repo.get_sources()))
        if key not in trees:
            trees[key] = original_create(repo, config_name, groups, prepend_hydra, skip_missing)
        base = trees[key]
        return DefaultsList(defaults=base.defaults, config_overrides=overrides.config_overrides,
                            defaults_tree=base.defaults_tree, overrides=base.overrides)

    def compose_from_defaults(self: Any, defaults: Any, repo: Any) -> Any:
        if not any(defaults is tree.defaults for tree in trees.values()):
            return original_compose(self, defaults, repo)
        if id(defaults) not in merged:
            merged[id(defaults)] = original_compose(self, defaults, repo)
        return copy.deepcopy(merged[id(defaults)])

    loader.create_defaults_list = create_defaults_list
    loader.ConfigLoaderImpl._compose_config_from_defaults_list = compose_from_defaults


if not os.environ.get("VERL_GEN_ORACLE_NO_CACHE"):  # to compare verdicts with Hydra untouched
    cache_yaml_parsing()
    cache_interpolation_parsing()
    cache_defaults_trees()
_hydra_dir: str | None = None
_defaults_cache: dict[tuple[str, str], Any] = {}


def _use_config_dir(config_dir: str) -> None:
    """Keep one Hydra instance per config folder: its repository caches parsed YAML."""
    global _hydra_dir
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if _hydra_dir == config_dir and GlobalHydra.instance().is_initialized():
        return
    GlobalHydra.instance().clear()
    initialize_config_dir(config_dir=config_dir, version_base=None)
    _hydra_dir = config_dir


def compose(config_dir: str, config_name: str, overrides: list[str]) -> Any:
    from hydra import compose as hydra_compose

    _use_config_dir(config_dir)
    return hydra_compose(config_name=config_name, overrides=list(overrides))


def default_value(config_dir: str, config_name: str, key: str) -> Any:
    """A key's value in the config composed without overrides (missing -> KeyError)."""
    from omegaconf import OmegaConf

    cache_key = (config_dir, config_name)
    if cache_key not in _defaults_cache:
        _defaults_cache[cache_key] = compose(config_dir, config_name, [])
    node = OmegaConf.select(_defaults_cache[cache_key], key, throw_on_missing=False,
                            throw_on_resolution_failure=False, default=KeyError)
    if node is KeyError:
        raise KeyError(key)
    return node


def typed_unknown(config_dir: str, config_name: str, keys: list[str]) -> str | None:
    """The first key whose value the reader could not see and whose type is not text: verl's
    verdict would depend on the value, so the case cannot be decided."""
    for key in keys:
        try:
            value = default_value(config_dir, config_name, key)
        except KeyError:
            continue  # a key Hydra will refuse anyway: compose decides
        except Exception:  # an unresolvable default: leave it to compose/validate
            continue
        if isinstance(value, bool) or isinstance(value, (int, float)):
            return key
    return None


# ----------------------------------------------------------------------------------- validate


def use_reference_policy(cfg: Any) -> bool:
    # main_ppo adds a reference-policy role (legacy workers) or the fused ActorRolloutRef role
    # (new engine) exactly when a KL term needs the reference model.
    return bool(cfg.algorithm.get("use_kl_in_reward", False)
                or cfg.actor_rollout_ref.actor.get("use_kl_loss", False))


def use_critic(cfg: Any) -> bool:
    enable = cfg.critic.get("enable", None)
    if enable is not None:
        return bool(enable)
    return cfg.algorithm.adv_estimator == "gae"


def choose_workers(cfg: Any) -> None:
    """main_ppo's worker-class choice, which raises before validation for strategies it does
    not know. Reproduced without importing the worker modules (they need GPUs' libraries)."""
    legacy = cfg.trainer.get("use_legacy_worker_impl", "auto")
    if legacy != "disable" and cfg.actor_rollout_ref.actor.strategy not in TRAINING_STRATEGIES:
        raise NotImplementedError(f"actor strategy {cfg.actor_rollout_ref.actor.strategy!r}")
    critic_strategy = cfg.critic.strategy
    if critic_strategy in ("fsdp", "fsdp2"):
        if legacy not in LEGACY_CHOICES:
            raise ValueError(f"Invalid use_legacy_worker_impl: {legacy}")
    elif critic_strategy != "megatron":
        raise NotImplementedError(f"critic strategy {critic_strategy!r}")
    if cfg.reward_model.get("enable", False):
        if legacy not in LEGACY_CHOICES:
            raise ValueError(f"Invalid use_legacy_worker_impl: {legacy}")
        if cfg.reward_model.strategy not in TRAINING_STRATEGIES:
            raise NotImplementedError(f"reward model strategy {cfg.reward_model.strategy!r}")


def point_models_at(cfg: Any, model_dir: str) -> None:
    """Model loading is not what is being judged: every model path names our local folder."""
    from omegaconf import OmegaConf, open_dict

    with open_dict(cfg):
        for key in ("actor_rollout_ref.model.path", "critic.model.path", "reward_model.model.path"):
            if OmegaConf.select(cfg, key, throw_on_resolution_failure=False) is not None:
                OmegaConf.update(cfg, key, model_dir, force_add=False)
        for key in ("critic.model.tokenizer_path", "critic.model.hf_config_path",
                    "actor_rollout_ref.model.tokenizer_path", "actor_rollout_ref.model.hf_config_path"):
            if OmegaConf.select(cfg, key, throw_on_resolution_failure=False) is not None:
                OmegaConf.update(cfg, key, model_dir, force_add=False)


def verl_release() -> tuple[int, ...]:
    from importlib.metadata import version

    parts = []
    for piece in version("verl").split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


# From 0.8.0 main_ppo's main() validates before any worker class is chosen, with verl's own
# need_reference_policy / need_critic, and the legacy worker switch is gone (verl/trainer/main_ppo.py
# @v0.8.0; 0.9.1 wheel: main() calls auto_set_device, then validate_config; TaskRunner resolves).
ENGINE_ONLY = (0, 8, 0)


def validate_engine_release(cfg: Any, model_dir: str) -> None:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    auto_set_device(cfg)
    point_models_at(cfg, model_dir)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    OmegaConf.to_container(cfg, resolve=True)  # TaskRunner prints the resolved config
    OmegaConf.resolve(cfg)


def judge(request: dict[str, Any]) -> dict[str, Any]:
    from omegaconf import OmegaConf
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    config_dir = request.get("config_dir") or str(CONFIG_DIR)
    if request.get("config_relative"):
        # Hydra resolves a relative --config-path against the folder of the @hydra.main file
        # (verl/trainer/main_ppo.py), not against the working directory.
        config_dir = os.path.normpath(CONFIG_DIR.parent / request["config_relative"])
    config_name = request.get("config_name") or "ppo_trainer"
    if not os.path.isdir(config_dir):
        return {"verdict": "reject", "stage": "compose",
                "message": f"MissingConfigException: config folder {config_dir} not found"}
    blocking = typed_unknown(config_dir, config_name, request.get("typed_unknowns", []))
    if blocking is not None:
        return {"verdict": "undecided", "stage": None,
                "message": f"{blocking} depends on a value the reader could not see"}
    try:
        cfg = compose(config_dir, config_name, request["overrides"])
    except Exception as exc:
        return {"verdict": "reject", "stage": "compose", "message": describe(exc)}
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            if RELEASE >= ENGINE_ONLY:
                validate_engine_release(cfg, request["model_dir"])
                return {"verdict": "accept", "stage": None, "message": ""}
            auto_set_device(cfg)
            point_models_at(cfg, request["model_dir"])
            OmegaConf.to_container(cfg, resolve=True)  # TaskRunner.run prints the resolved config
            OmegaConf.resolve(cfg)
            choose_workers(cfg)
            validate_config(cfg, use_reference_policy=use_reference_policy(cfg),
                            use_critic=use_critic(cfg))
    except Exception as exc:
        if mentions_vllm(exc):
            return {"verdict": "needs-vllm", "stage": "validate", "message": describe(exc)}
        return {"verdict": "reject", "stage": "validate", "message": describe(exc)}
    return {"verdict": "accept", "stage": None, "message": ""}


def serve() -> None:
    global RELEASE
    RELEASE = verl_release()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "init":
            for model_dir in request.get("model_dirs", []):
                ensure_tokenizer(model_dir)
            import verl.utils.config

            if RELEASE >= ENGINE_ONLY:
                import verl.trainer.ppo.utils  # noqa: F401

            answer: dict[str, Any] = {"ready": True, "config_dir": str(CONFIG_DIR)}
        else:
            started = time.monotonic()
            try:
                answer = judge(request)
            except Exception:  # a bug here must not look like verl's verdict
                answer = {"verdict": "error", "stage": None,
                          "message": one_line(traceback.format_exc(limit=3), 1000)}
            answer["id"] = request.get("id")
            answer["seconds"] = round(time.monotonic() - started, 3)
        PROTOCOL_OUT.write(json.dumps(answer) + "\n")
        PROTOCOL_OUT.flush()


if __name__ == "__main__":
    serve()
