"""Where recipes live and how they are found: the packaged library plus one user library.

User library, first found wins: `--library DIR`, then `$VERL_GEN_LIBRARY`, then the per-user
config folder (`$XDG_CONFIG_HOME/verl-gen/recipes`, default `~/.config/verl-gen/recipes`).
A user recipe with the same name as a packaged one shadows it (the user's copy is what they
edited on purpose).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from generator.base.boundary import Boundary, real_path
from generator.base.errors import InputError
from generator.library.recipe_format import Recipe, recipe_from_mapping
from generator.base.resources import recipes_dir

if TYPE_CHECKING:
    import yaml

ENV_VAR = "VERL_GEN_LIBRARY"
MAX_RECIPE_BYTES = 1_000_000


def user_library_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The user's recipe folder (it need not exist yet)."""
    if explicit:
        return Path(explicit).expanduser()
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "verl-gen" / "recipes"


def _load_yaml(text: str, where: str = "recipe") -> object:
    """Parse recipe YAML with YAML 1.2 core-schema scalars (what ruamel.yaml reads).

    libyaml's C parser (PyYAML, installed with omegaconf) is ~13x faster than ruamel's pure
    Python loader, which matters because `gen list` parses every recipe; its resolvers are
    swapped for the YAML 1.2 ones so `yes` stays a string and `1e-6` is a float, exactly as
    ruamel reads them (tests/test_library_yaml.py compares the two). Without libyaml, ruamel.
    """
    loader = _fast_loader()
    if loader is None:
        from ruamel.yaml import YAML

        return YAML(typ="safe", pure=True).load(text)
    from generator.schema.yamlload import construct_bounded

    # Bounded like every YAML gen reads: a 1 KB alias bomb in a recipe hung `gen list` (issue 21).
    return construct_bounded(loader(text), text, where)


_FAST_LOADER: list[type[yaml.CSafeLoader] | None] = []  # the loader class, once built (None: no libyaml)


def _fast_loader() -> type[yaml.CSafeLoader] | None:
    if _FAST_LOADER:
        return _FAST_LOADER[0]
    try:
        import yaml

        base = yaml.CSafeLoader
    except (ImportError, AttributeError):
        _FAST_LOADER.append(None)
        return None

    class Yaml12Loader(base):  # type: ignore[misc, valid-type]
        pass

    # ruamel's own YAML 1.2 resolver table (data), so both loaders agree on every scalar.
    from ruamel.yaml.resolver import implicit_resolvers

    wanted = {"bool", "float", "int", "null", "timestamp"}
    Yaml12Loader.yaml_implicit_resolvers = {}
    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions and tag.rsplit(":", 1)[-1] in wanted:
            Yaml12Loader.add_implicit_resolver(tag, regexp, list(first))

    def construct_int(loader: yaml.CSafeLoader, node: yaml.ScalarNode) -> int:
        text = loader.construct_scalar(node).replace("_", "")
        sign = -1 if text.startswith("-") else 1
        text = text.lstrip("+-")
        for prefix, base_ in (("0b", 2), ("0x", 16), ("0o", 8)):
            if text.startswith(prefix):
                return sign * int(text[2:], base_)
        return sign * int(text)

    def construct_float(loader: yaml.CSafeLoader, node: yaml.ScalarNode) -> float:
        text = loader.construct_scalar(node).replace("_", "").lower()
        if text.endswith(".inf"):
            return float("-inf") if text.startswith("-") else float("inf")
        if text.endswith(".nan"):
            return float("nan")
        return float(text)

    def construct_bool(loader: yaml.CSafeLoader, node: yaml.ScalarNode) -> bool:
        return loader.construct_scalar(node).lower() == "true"

    Yaml12Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Yaml12Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
    Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    _FAST_LOADER.append(Yaml12Loader)
    return Yaml12Loader


def read_recipe(path: Path, *, origin: str = "user") -> Recipe:
    """Read and validate one recipe file. Raises InputError with a one-line message."""
    where = str(path)
    from generator.base.files import read_input

    try:  # regular files only, the size cap checked before reading
        raw = read_input(path, limit=MAX_RECIPE_BYTES, what="recipe", trusted=True)  # the user's own library
    except InputError as err:
        message = str(err)
        raise InputError(f"{where}: {message}, not a recipe file" if message == "is a directory"
                         else f"{where}: {message}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text") from None
    try:
        data = _load_yaml(text, where)
    except InputError:  # too many nodes, or aliases that expand too far: already one line
        raise
    except Exception as err:  # ruamel raises many kinds; all mean "not valid YAML"
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise InputError(f"{where}: invalid YAML{at}: {problem}") from None
    return recipe_from_mapping(data, where=where, path=path, origin=origin)


@dataclass(frozen=True, slots=True)
class Library:
    """All recipes that could be read, plus one-line errors for those that could not."""

    recipes: dict[str, Recipe]
    errors: list[str]
    user_dir: Path

    def get(self, name: str) -> Recipe:
        recipe = self.recipes.get(name)
        if recipe is None:
            import difflib

            close = difflib.get_close_matches(name, list(self.recipes), n=3, cutoff=0.5)
            hint = f"; close names: {', '.join(close)}" if close else "; `gen list` shows them all"
            raise InputError(f"unknown recipe '{name}'{hint}")
        return recipe

    def search(self, *, model: str | None = None, gpus: int | None = None, algo: str | None = None,
               tag: str | None = None, verl_version: str | None = None) -> list[Recipe]:
        if verl_version is not None:
            return [r for r in self.search(model=model, gpus=gpus, algo=algo, tag=tag)
                    if stamped_for(r, verl_version)]
        found = [r for r in self.sorted() if matches(r, model=model, gpus=gpus, algo=algo, tag=tag)]
        if model and not found:
            # `qwen2.5-7b-instruct` or a local model folder: compare registry identities instead
            wanted = _registry_name(model)
            if wanted is not None:
                found = [r for r in self.sorted() if _registry_name(r.model) == wanted
                         and matches(r, gpus=gpus, algo=algo, tag=tag)]
        return found

    def sorted(self) -> list[Recipe]:
        return sorted(self.recipes.values(), key=_sort_key)


def _sort_key(recipe: Recipe) -> tuple[str, int, str, str]:
    return (recipe.model.lower(), recipe.gpus, recipe.algorithm, recipe.name)


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def matches(recipe: Recipe, *, model: str | None = None, gpus: int | None = None,
            algo: str | None = None, tag: str | None = None) -> bool:
    """Filter semantics of `gen list`: model is a case/punctuation-insensitive substring
    (`qwen2.5-7b` matches `Qwen2.5-7B-Instruct`), the others are exact."""
    if model and _norm(model) not in _norm(recipe.model) and _norm(model) not in _norm(recipe.name):
        return False
    if gpus is not None and recipe.gpus != gpus:
        return False
    if algo and algo.lower() not in (recipe.algorithm, recipe.runs):
        return False
    if tag and tag.lower() not in (t.lower() for t in recipe.tags):
        return False
    return True


def stamped_for(recipe: Recipe, release: str) -> bool:
    """Whether the recipe says it targets `release`: an exact stamp ('0.9.1'), or any stamp of a
    shorter release number ('0.9' matches 0.9.0 and 0.9.1). InputError for text that is not a
    release number."""
    from generator.base.errors import InputError
    from generator.verl.versions import parse

    text = release.strip().lstrip("vV")
    try:
        parse(text)
    except ValueError:
        raise InputError(f"--verl-version: '{release}' is not a release number") from None
    return any(stamp == text or stamp.startswith(text + ".") for stamp in recipe.verl_versions)


def _registry_name(model: str) -> str | None:
    from generator.model import find_model

    try:
        facts = find_model(model)
    except Exception:  # a malformed config.json path given as --model: no registry identity
        return None
    return facts.name if facts is not None else None


def _recipe_files(folder: Path) -> Iterable[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def load_library(library: str | os.PathLike[str] | None = None, *, packaged: bool = True) -> Library:
    """Read the packaged recipes and the user library. Unreadable files become errors (the
    rest still load), so one broken user file does not hide the library."""
    recipes: dict[str, Recipe] = {}
    errors: list[str] = []
    user_dir = user_library_dir(library)
    if library and not Path(library).expanduser().is_dir():
        raise InputError(f"{library}: library folder does not exist")
    sources: list[tuple[Path, str]] = []
    if packaged:
        sources.append((recipes_dir(), "packaged"))
    sources.append((user_dir, "user"))
    for folder, origin in sources:
        # A recipe folder is read like a project: a link in it that leads out is not followed
        # (a library committed in a repository may hold `x.yaml -> ~/.aws/credentials`, and a
        # recipe's fields are printed, a broken one's quoted in the warning).
        inside = Boundary(real_path(folder)) if origin == "user" and folder.is_dir() else None
        for path in _recipe_files(folder):
            if inside is not None and not inside.allows(path):
                errors.append(f"{path}: a symbolic link leads it outside the library folder ({folder}); not read")
                continue
            try:
                recipe = read_recipe(path, origin=origin)
            except InputError as err:
                errors.append(str(err))
                continue
            previous = recipes.get(recipe.name)
            if previous is not None and previous.origin == origin:
                errors.append(f"{path}: recipe name '{recipe.name}' is also used by {previous.path}")
                continue
            recipes[recipe.name] = recipe
    return Library(recipes=recipes, errors=errors, user_dir=user_dir)
