"""Which verl release and which config a script's trainer calls are judged against, and why.

One answer per script, in this order (the first that applies wins):

  1. explicit options: `--verl-version` (a packaged release, else exit 2) and `--config-dir`
     (a folder of verl config YAML: it becomes the schema);
  2. the project configuration (generator.project.settings): `verl-version`, `config-dirs`;
  3. the project's own verl, found going up from the script: a vendored or submodule `verl/`
     package with `trainer/config/ppo_trainer.yaml` (its YAML is the schema; its release is
     `version/version`, else inferred from the script's keys);
     A project's verl configured by dataclasses (EasyR1 style, generator.schema.dataclass_fork)
     is named, with a packaged release only standing in: its schema is unknown; so is a verl git
     submodule `.gitmodules` names that is not checked out (generator.schema.submodule);
  4. the verl installed in the active Python environment (found without importing it);
  5. otherwise the release a script written by `gen recipe` names in its header, else the one
     the project pins in its dependency files (`verl==0.8.0`: generator.schema.pinned), else a guess
     from the script's keys (generator.schema.guess: the newest packaged release whose config
     has every key the script sets without `+`); the report says it is a guess.

A config tree read from the project is registered as a schema id `<release>+project`:
its keys and defaults come from composing that YAML, never from a packaged schema of another
release, while version-gated rules read the release before the `+`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Sequence

from generator.base.errors import InputError
from generator.reading.launch_script import UNKNOWN_OPEN, Invocation, LaunchScript
from generator.project.settings import NO_PROJECT, ProjectSettings
from generator.schema.release_schema import (
    PROJECT_MARK,
    Schema,
    UnreadableConfig,
    available,
    is_packaged,
    load,
    normalize,
    project_base,
    register_dir,
    registered,
)
from generator.schema.dataclass_fork import find_dataclass_verl
from generator.schema.entry import ppo_entry_config
from generator.schema.imports import ImportedVerl, checkout_root, imported_verl
from generator.schema.pinned import pinned_release
from generator.schema.requirements_release import RequirementsRelease, narrowed, nearest_requirements_release
from generator.schema.submodule import absent_verl_submodule
from generator.schema.releases import nearest_older, packaged_releases
from generator.verl.places import find_project_verl, has_ppo_config, installed_verl, read_version
from generator.verl.constants import CONFIG_SUBDIR, PPO_CONFIGS, PPO_ENTRY, config_stem, packaged_config_of
from generator.verl.versions import parse
from generator.base import boundary
from generator.reading.python.hydra_main import entry_config
from generator.schema.compose import ComposeError, compose, flatten
from generator.schema.guess import release_has, releases_with, guess_release, group_keys as keys
from generator.schema.layered import layered_ppo_config

# (key, config name) pairs a script sets with plain `key=`: the evidence for inference.
KeyUses = Sequence[tuple[str, str]]


class Resolution(NamedTuple):
    """The verl a script is judged against.

    release        the schema id configs are built with (a packaged id, or a registered
                   `<release>+project` for a config tree read from the project)
    config_source  where keys and defaults come from, for the report
    reason         why this verl was chosen, for the report
    config_dir     the config folder read, when the schema is not a packaged one
    inferred       True when the release was guessed from the script's keys
    stand_in       why the project's own config is unknown, when it could not be read and a
                   packaged schema stands in (its defaults are then not trusted: rules that
                   depend on a default are skipped, with one info finding per call)
    """

    release: str
    config_source: str
    reason: str
    config_dir: Path | None = None
    inferred: bool = False
    stand_in: str | None = None
    # Folders a call's --config-name is also looked up in (the project file's config-dirs).
    search_dirs: tuple[Path, ...] = ()
    # (config dir, config name) the project's own `verl/trainer/main_ppo.py` composes when its
    # `@hydra.main` names another config than verl's (a fork's `config_name='grpo_trainer'`):
    # what `python -m verl.trainer.main_ppo` without --config-name loads (generator.schema.entry).
    ppo_entry: tuple[str, str] | None = None
    # No verl was found and the script sets no verl key: the release is the newest packaged one
    # by default, so verdicts read from its defaults would be guesses (those rules do not run).
    guessed: bool = False
    # The project's own verl package (vendored, a submodule, found on the import path): its
    # trainer code is read for what the fork does with config keys (generator.reading.fork_code).
    package: Path | None = None
    # When the release is inferred (not named by an option, a version file, a pin or an installed
    # verl): every packaged release the evidence allows, oldest first (those whose config has every
    # key the script sets; all of them without keys). A finding that does not hold on each of them
    # rests on the guess, not on the user's setup (generator.judging.release_evidence).
    allowed: tuple[str, ...] = ()

    @property
    def base_release(self) -> str:
        """The plain release version-gated rules use ('0.4.1' for '0.4.1+project')."""
        return project_base(self.release) or self.release

    def for_call(self, config_name: str, config_dir: str | None) -> "Resolution":
        """This resolution as one call sees it: a call that composes its own config (its
        --config-path, or its entry's @hydra.main folder) takes keys and defaults from there."""
        if config_dir is None or (self.config_dir is not None and Path(config_dir) == self.config_dir):
            return self
        source = f"{config_name}.yaml at {config_dir}, over {self.config_source}"
        return self._replace(config_source=source, config_dir=Path(config_dir))

    def summary(self) -> str:
        """One line for a text report: 'verl 0.4.1 (config: ...; chosen: ...)'."""
        return f"verl {self.base_release} (config: {self.config_source}; chosen: {self.reason})"

    def as_dict(self) -> dict[str, object]:
        return {"release": self.base_release, "schema": self.release, "config_source": self.config_source,
                "reason": self.reason, "config_dir": str(self.config_dir) if self.config_dir else None,
                "inferred": self.inferred, "stand_in": self.stand_in}


def known_release(text: str, where: str) -> str:
    """The packaged schema id for `text`; InputError naming `where` when it is not one."""
    wanted = normalize(text)
    if wanted in available():
        return wanted
    raise InputError(f"{where}: unknown verl release '{text}'; known: {', '.join(available())}")


def known_config_dir(text: str) -> Path:
    """The folder `--config-dir` names; InputError when it holds no PPO trainer config."""
    folder = Path(text)
    if not has_ppo_config(folder):
        raise InputError(f"--config-dir {text}: no ppo_trainer.yaml or ppo_megatron_trainer.yaml there")

    # The user named it: readable from any script's project, and so is the verl package it
    # sits in (`verl/trainer/config`: its version/version file says the release).
    resolved = folder.resolve()
    boundary.trust(resolved.parent.parent if resolved.parts[-2:] == CONFIG_SUBDIR else resolved)
    return folder


def check_explicit(version: str | None, config_dir: str | None) -> None:
    """Refuse a bad `--verl-version` or `--config-dir` once, before any file is read (exit 2)."""
    if version is not None and version.strip():
        known_release(version, "--verl-version")
    if config_dir:
        known_config_dir(config_dir)


def resolve(
    script_path: str | None,
    *,
    version: str | None = None,
    config_dir: str | None = None,
    project: ProjectSettings = NO_PROJECT,
    keys: Callable[[], KeyUses] = lambda: (),
    declared: Callable[[], str | None] = lambda: None,
    imported: Callable[[], ImportedVerl | None] = lambda: None,
) -> Resolution:
    """The Resolution for a script at `script_path` (None: text without a file). `keys` and
    `declared` give the evidence for step 5 (script_keys, declared_release); `imported` the verl
    the script's calls would import from the checkout (generator.schema.imports) when no verl
    sits above the script."""
    found = _resolve(script_path, version, config_dir, project, keys, declared, imported)
    return found._replace(search_dirs=project.config_dirs) if project.config_dirs else found


def _resolve(script_path: str | None, version: str | None, config_dir: str | None, project: ProjectSettings,
             keys: Callable[[], KeyUses], declared: Callable[[], str | None],
             imported: Callable[[], ImportedVerl | None]) -> Resolution:
    explicit = known_release(version, "--verl-version") if version and version.strip() else None
    if config_dir:
        return _from_config_dir(known_config_dir(config_dir), explicit, "--config-dir", keys)
    if explicit is not None:
        return Resolution(explicit, f"packaged schema {explicit}", "--verl-version")

    if project.path is not None:
        where = project.describe()
        pinned = known_release(project.verl_version, where) if project.verl_version else None
        for folder in project.config_dirs:
            if has_ppo_config(folder):
                return _from_config_dir(folder, pinned, f"config-dirs of {where}", keys)
        if pinned is not None:
            return Resolution(pinned, f"packaged schema {pinned}", f"verl-version of {where}")

    if script_path is not None:
        package = find_project_verl(script_path)
        if package is not None:
            return _from_package(package, keys)
        found_import = imported()
        if found_import is not None:
            return _from_package(found_import.package, keys, found_import.reason)
        dataclass_fork = find_dataclass_verl(script_path)
        if dataclass_fork is not None:
            return _from_dataclass_fork(*dataclass_fork, keys)
        root = checkout_root(script_path)
        submodule = absent_verl_submodule(root)
        if submodule is not None:
            return _from_absent_submodule(submodule, root, keys)

    found = _installed_resolution()
    if found is not None:
        return found

    written_for = declared()
    if written_for is not None and is_packaged(written_for):
        return Resolution(written_for, f"packaged schema {written_for}",
                          f"the script's header (written by gen recipe for verl {written_for})")
    if script_path is not None:
        root = checkout_root(script_path)
        pin = pinned_release(script_path, root)
        if pin is not None:
            return Resolution(pin.release, f"packaged schema {pin.release}", pin.reason(root))
        copied = nearest_requirements_release(_folders_up(Path(script_path).absolute().parent, root))
        if copied is not None:
            return _from_requirements(copied, keys())
    evidence = keys()
    release, how = infer_release(evidence)
    return Resolution(release, f"packaged schema {release}", how, inferred=True, guessed=not evidence,
                      allowed=releases_with(evidence))


def resolve_version(explicit: str | None = None, option: str = "--verl-version") -> tuple[str, str]:
    """(schema id, why) where there is no script to resolve for (the target of `gen migrate`, a
    recipe diff, the oracle's release): an explicit release must be packaged (`option` names it
    in the error); else the installed verl exactly as resolve() takes it (an unpackaged one is
    read from its own config YAML under its own version and named "installed verl X" in the
    reason: it is the truth for that user, but never listed as a packaged release that
    --verl-version or a migration could name); else the newest packaged release."""
    if explicit is not None and explicit.strip():
        return known_release(explicit, option), option
    found = _installed_resolution()
    if found is not None:
        return found.release, found.reason
    return packaged_releases()[-1], "newest packaged"


def recipe_release(found: Resolution) -> tuple[str, str | None]:
    """The packaged release a recipe made from a script resolved as `found` targets (recipes
    render for packaged releases only), and a note for the user when that is not the schema the
    script was judged against (a project's config tree, an installed unpackaged verl)."""
    if is_packaged(found.release):
        return found.release, None
    base = found.base_release
    target = base if is_packaged(base) else nearest_older(base) or packaged_releases()[0]
    return target, f"the script runs {found.summary()}; the recipe targets packaged verl {target}"


def resolve_script(script: LaunchScript, path: str | None = None, *, version: str | None = None,
                   config_dir: str | None = None, project: ProjectSettings = NO_PROJECT) -> Resolution:
    """resolve() for a read script, with its keys and header as the evidence of last resort.
    A script whose calls set no verl key plainly but run a project's own Hydra entry (its config
    a fork of verl's, e.g. `python -m pkg.main_x_ppo` with `@hydra.main(config_path="configs")`)
    is inferred from that config's keys instead, and the reason says so."""
    where = path if path is not None else script.path
    entry_config: list[str] = []

    def keys() -> KeyUses:
        found = script_keys(script.invocations)
        if found or where is None:
            return found
        for name, composed in _entry_config_keys(script.invocations, where):
            entry_config.append(name)
            return composed
        return found

    found = resolve(where, version=version, config_dir=config_dir, project=project, keys=keys,
                    declared=lambda: declared_release(script.source),
                    imported=lambda: imported_verl(script.invocations, where) if where is not None else None)
    if found.inferred and entry_config:
        # Keys of a call whose config layers a verl that is absent tell the release at best: the
        # defaults that verl composes are still unknown, so they are not trusted (as for a guess).
        layered = entry_config[0].startswith(_LAYERED_EVIDENCE)
        return found._replace(reason=found.reason.replace("the script's keys", f"the keys of {entry_config[0]}"),
                              guessed=found.guessed or layered)
    return found


# How _entry_config_keys names the evidence of a call whose config layers verl's (schema.layered).
_LAYERED_EVIDENCE = "the call (its "


def _entry_config_keys(invocations: Iterable[Invocation], script_path: str) -> Iterable[tuple[str, KeyUses]]:
    """(where, keys) of each live call's own entry config found in the project: the composed
    `@hydra.main` config of an entry module other than verl's trainer."""
    for inv in invocations:
        if inv.branch == "dead" or inv.entry == PPO_ENTRY or not inv.entry:
            continue
        found = entry_config(inv.entry, script_path)
        if found is None or found.config_dir is None or not found.config_name:
            continue
        try:
            flat = flatten(compose(found.config_dir, found.config_name))
        except (InputError, OSError, ValueError, ComposeError):
            # e.g. its defaults list names verl's ppo_trainer from a searchpath into a verl that
            # is absent: the call's own keys are then verl's keys (generator.schema.layered)
            ppo = layered_ppo_config(found.config_dir, found.config_name)
            own = _plain_keys(inv, ppo) if ppo is not None else []
            if own:
                yield f"{_LAYERED_EVIDENCE}{found.config_name}.yaml layers verl's {ppo})", own
            continue
        if flat:
            yield f"{found.config_name}.yaml at {found.config_dir}", [(key, PPO_CONFIGS[0]) for key in flat]


# The header line `gen recipe` writes (templates/recipe/_common.sh.j2), within the first lines.
_RECIPE_HEADER = re.compile(rb"^# Written by `gen recipe` for verl ([0-9][0-9A-Za-z.+]*) ", re.M)


def declared_release(source: bytes) -> str | None:
    """The release a script written by `gen recipe` says it is for; None for other scripts."""
    found = _RECIPE_HEADER.search(source[:2048])
    return found.group(1).decode("ascii") if found else None


# has(release, key, config name): whether that release's schema has the key.
HasKey = Callable[[str, str, str], bool]


def _packaged_has(release: str, key: str, name: str) -> bool:
    return release_has(release, key, name)


def oldest_release_with(keys: KeyUses, releases: Sequence[str] | None = None,
                        has: HasKey = _packaged_has) -> str | None:
    """The oldest release (of `releases`, by default every packaged one) whose schema has every
    key; None when none has them all or there are no keys. `gen migrate` infers its --from so."""
    if not keys:
        return None
    for release in sorted(packaged_releases() if releases is None else releases, key=parse):
        try:
            if all(has(release, key, name) for key, name in keys):
                return release
        except InputError:  # a release without schema data: skip it
            continue
    return None


def infer_release(keys: KeyUses) -> tuple[str, str]:
    """(release, how) from the keys a script sets with plain `key=`: a guess, made by
    generator.schema.guess (the newest packaged release whose config has every key under some
    group selection; else the one with the most)."""
    return guess_release(keys)


# --- helpers ---------------------------------------------------------------------------------


def _schema_has(schema: Schema, key: str, name: str) -> bool:
    config = name if name in schema.configs else PPO_CONFIGS[0]
    return schema.has(key, config)


def _project_schema_id(release: str, config_dir: Path) -> str:
    """The schema id a project's config folder is registered under in this command."""
    ids = registered().project_ids
    folder = config_dir.resolve()
    known = ids.get(folder)
    if known is not None and project_base(known) == release:
        return known
    taken = set(ids.values())
    candidate, number = f"{release}{PROJECT_MARK}", 1
    while candidate in taken:
        number += 1
        candidate = f"{release}{PROJECT_MARK}{number}"
    ids[folder] = candidate
    return candidate


def _register(release: str, config_dir: Path, source: str) -> str:
    schema_id = _project_schema_id(release, config_dir)
    register_dir(schema_id, config_dir, source=source, listed=False)
    return schema_id


def _base_of(text: str | None) -> str | None:
    """'0.4.1.dev' -> '0.4.1'; None when the text is not a version."""
    if not text:
        return None
    try:
        return ".".join(str(p) for p in parse(text))
    except ValueError:
        return None


def _from_config_dir(folder: Path, release: str | None, why: str, keys: Callable[[], KeyUses]) -> Resolution:
    """A config tree given by the user: its YAML is the schema; the release is the one given,
    else the version file of the verl package it sits in, else inferred."""
    folder = folder.resolve()
    reason = why
    if release is None:
        package = folder.parent.parent if folder.parts[-2:] == CONFIG_SUBDIR else None
        release = _base_of(read_version(package)) if package is not None else None
        if release is not None:
            reason = f"{why} (release from {package}/version/version)"
    inferred, allowed = False, tuple[str, ...]()
    if release is None:
        evidence = keys()
        release, how = infer_release(evidence)
        reason, inferred, allowed = f"{why}; release {how}", True, releases_with(evidence)
    schema_id = _register(release, folder, f"verl config YAML at {folder}")
    package = folder.parent.parent if folder.parts[-2:] == CONFIG_SUBDIR else None
    return _readable(Resolution(schema_id, f"verl config YAML at {folder}", reason, folder, inferred,
                                package=package, allowed=allowed))


def _from_package(package: Path, keys: Callable[[], KeyUses], why: str | None = None) -> Resolution:
    """The project's own verl: its config YAML is the schema. `why` says how it was found when
    it is not the one above the script."""
    folder = package.joinpath(*CONFIG_SUBDIR)
    version_text = read_version(package)
    release = _base_of(version_text)
    found = f"the project's verl at {package}" + (f": {why}" if why else "")
    allowed: tuple[str, ...] = ()
    copied = None if release is not None else nearest_requirements_release(_package_top(package))
    if release is not None:
        reason = f"{found} (version file: {version_text})"
        inferred = False
    elif copied is not None:
        release, allowed = narrowed(copied, releases_with(keys()))
        reason = f"{found} (no version file; {copied.said()}: judged as {release})"
        inferred, allowed = len(allowed) > 1, allowed if len(allowed) > 1 else ()
    else:
        evidence = keys()
        release, how = infer_release(evidence)
        reason, inferred, allowed = f"{found} (no version file; release {how})", True, releases_with(evidence)
    schema_id = _register(release, folder, f"the project's verl config YAML at {folder}")
    found_entry = ppo_entry_config(package)
    ppo_entry = None
    if found_entry is not None:
        ppo_entry = (str(found_entry.config_dir), found_entry.config_name)
        reason += f"; {found_entry.reason}"
    return _readable(Resolution(schema_id, f"verl config YAML at {folder}", reason, folder, inferred,
                                ppo_entry=ppo_entry, package=package, allowed=allowed))


def _from_requirements(copied: RequirementsRelease, evidence: KeyUses) -> Resolution:
    """No verl found and no pin, but the project carries verl's own requirements.txt of some
    releases: judged by the newest of them the script's keys allow, and, where several remain,
    with the others as the releases a finding must also hold on."""
    release, allowed = narrowed(copied, releases_with(evidence))
    several = len(allowed) > 1
    return Resolution(release, f"packaged schema {release}", f"{copied.said()}: judged as {release}"
                      + (f", the newest of {', '.join(allowed)} it allows" if several else ""),
                      inferred=several, allowed=allowed if several else ())


def _folders_up(here: Path, root: Path) -> list[Path]:
    """The script's folder and its parents up to the checkout's root (nearest first), bounded."""
    chain = [here, *here.parents][:8]
    return chain[: chain.index(root) + 1] if root in chain else [here]


def _package_top(package: Path) -> list[Path]:
    """The folder a vendored verl package sits in (its repository's top for a submodule or a
    `src/` layout): where verl's own requirements.txt would be."""
    top = package.parent
    return [top, top.parent] if top.name == "src" else [top]


def _from_dataclass_fork(package: Path, config: Path, keys: Callable[[], KeyUses]) -> Resolution:
    """A project's verl configured by dataclasses (generator.schema.dataclass_fork): its schema is
    unknown, so a packaged release only stands in (the rules that read keys or defaults stand
    down) while the fork's trainer code is still read."""
    evidence = keys()
    release, _ = infer_release(evidence)
    version_text = read_version(package)
    own = f", its own version {version_text}" if version_text else ""
    where = f"the project's verl at {package}{own}"
    return Resolution(release, f"packaged schema {release}, standing in for the dataclass config at {config}",
                      f"{where} configures its trainer with dataclasses ({config.name}), not Hydra YAML: "
                      "schema unknown", None, True,
                      stand_in=f"the dataclass config at {config} (not Hydra YAML: keys and defaults unknown)",
                      package=package, allowed=releases_with(evidence))


def _from_absent_submodule(folder: Path, root: Path, keys: Callable[[], KeyUses]) -> Resolution:
    """The project's verl is a git submodule not checked out (generator.schema.submodule): its
    release and config are unknown, so a packaged release guessed from the keys only stands in."""
    evidence = keys()
    release, how = infer_release(evidence)
    where = os.path.relpath(folder, root)
    return Resolution(release, f"packaged schema {release}, standing in for the verl submodule at {where}",
                      f"the project's verl is the git submodule at {where} (.gitmodules), which is not checked "
                      f"out here (`git submodule update --init {where}`): its release and config are unknown; "
                      f"release {how}", None, True,
                      stand_in=f"the verl submodule at {where} (not checked out: keys and defaults unknown)",
                      allowed=releases_with(evidence))


def _readable(found: Resolution) -> Resolution:
    """`found` when its config folder composes; else the nearest packaged release stands in
    for it, marked so that the checks do not trust its defaults."""
    try:
        schema = load(found.release)
    except UnreadableConfig as err:
        base = found.base_release
        older = [r for r in packaged_releases() if parse(r) <= parse(base)]
        stand_in = base if base in packaged_releases() else older[-1] if older else packaged_releases()[0]
        return Resolution(stand_in, f"packaged schema {stand_in}, standing in for {found.config_source}",
                          f"{found.reason}; its config could not be read", found.config_dir, found.inferred,
                          stand_in=f"the config at {found.config_dir} ({err})", ppo_entry=found.ppo_entry,
                          package=found.package, allowed=found.allowed)
    if schema.notes:
        return found._replace(reason=f"{found.reason}; {'; '.join(schema.notes)}")
    return found


def _installed_resolution() -> Resolution | None:
    """Step 4: the verl installed in the active Python environment, if any."""
    installed = installed_verl()
    return _from_installed(*installed) if installed is not None else None


def _from_installed(version: str, package: Path) -> Resolution | None:
    version_id = normalize(version)
    reason = f"installed verl {version} at {package}"
    if is_packaged(version_id):
        return Resolution(version_id, f"packaged schema {version_id}", reason)
    folder = package.joinpath(*CONFIG_SUBDIR)
    base = _base_of(version_id)
    if has_ppo_config(folder) and base is not None:
        # An installed verl is upstream's: registered under its own version (not as a project
        # tree), so that upstream's key history (renames, removals) still explains its keys.
        register_dir(version_id, folder, source=f"installed verl {version} at {package}", listed=False)
        return _readable(Resolution(version_id, f"verl config YAML at {folder}", reason, folder))
    if base is not None and is_packaged(base):
        return Resolution(base, f"packaged schema {base}", reason)
    older = [r for r in packaged_releases() if base is not None and parse(r) <= parse(base)]
    if older:
        return Resolution(older[-1], f"packaged schema {older[-1]}",
                          f"{reason} (not packaged; nearest older release)")
    return None


def group_keys() -> frozenset[str]:
    return keys()


def _plain_keys(inv: Invocation, name: str) -> list[tuple[str, str]]:
    """(key, config name) of one call's plain `key=` overrides (group selections as
    `group=option`): the evidence script_keys collects, for a call whose config is `name`."""
    out: list[tuple[str, str]] = []
    groups = group_keys()  # asked once per call, not once per override
    for override in inv.overrides:
        if override.key and override.op == "=" and UNKNOWN_OPEN not in override.key:
            if override.key in groups and override.value and UNKNOWN_OPEN not in override.value:
                out.append((f"{override.key}={override.value}", name))  # a group selection
            else:
                out.append((override.key, name))
    return out


def script_keys(invocations: Iterable[Invocation]) -> list[tuple[str, str]]:
    """(key, config name) of every plain `key=` override in the PPO calls that may run: the
    evidence infer_release weighs."""
    out: list[tuple[str, str]] = []
    for inv in invocations:
        if inv.branch == "dead" or (inv.entry != PPO_ENTRY and config_stem(inv.config_name) not in PPO_CONFIGS):
            continue  # generation, SFT and recipe configs have keys of their own
        out.extend(_plain_keys(inv, packaged_config_of(inv.config_name)))
    return out
