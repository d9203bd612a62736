"""VK612 — legacy reward keys that verl's main_ppo no longer reads (0.9.0 on).

The keys still compose (legacy_reward_impl.yaml keeps them as null stubs), so Hydra, verl's config
validation and our key checks all accept them; the run just never looks at them. Facts and
sources: generator.schema.reward_moves.
"""

from __future__ import annotations

from typing import Iterator

from generator.reading.launch_script import Override
from generator.rules.core import Context, Finding, rule
from generator.schema.reward_moves import NOT_MIGRATED_SINCE, ignored_by_main_ppo, move_for, what_is_lost
from generator.verl.constants import PPO_ENTRY
from generator.verl.versions import VersionRange

_ANY = ("megatron", "fsdp", "unknown")
_NULL = ("null", "None", "~", "")


def _shown(override: Override) -> str:
    return override.text if len(override.text) <= 80 else override.text[:77] + "..."


@rule("VK612", "legacy-reward-key-ignored", severity="error", stage="silent",
      versions=VersionRange(NOT_MIGRATED_SINCE, None), verl_ref="§3", backends=_ANY)
def legacy_reward_key_ignored(ctx: Context) -> Iterator[Finding]:
    config = ctx.config
    if (config.entry or PPO_ENTRY) != PPO_ENTRY or not ignored_by_main_ppo(ctx.version):
        return
    lost: dict[str, list[tuple[Override, str, str]]] = {}
    for key, override in config.set_by.items():
        found = move_for(key)
        if found is None or override.op == "~" or (override.value or "").strip("'\"") in _NULL:
            continue
        move, new_key = found
        if new_key in config.set_by:
            continue  # the script sets the key verl reads, too
        lost.setdefault(what_is_lost(key, override.value), []).append((override, new_key, move.new))
    for what, items in lost.items():
        items.sort(key=lambda item: item[0].line)
        first, new_key, _ = items[0]
        shown = ", ".join(_shown(o) for o, _, _ in items[:3]) + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")
        default = config.values.get(new_key)
        uses = f"; the run uses {new_key}={default}" if default is not None and len(items) == 1 else ""
        targets = new_key if len(items) == 1 else ", ".join(sorted({f"{base}.*" if base != n else n
                                                                    for _, n, base in items}))
        message = (f"{shown}: verl {ctx.version}'s main_ppo does not read the legacy reward keys (it stopped "
                   f"migrating them to reward.* in {NOT_MIGRATED_SINCE}), so {what} is lost{uses}; "
                   f"`gen migrate --to {ctx.version}` moves {'it' if len(items) == 1 else 'them'} to {targets}")
        yield legacy_reward_key_ignored.finding(message, line=first.line, key=first.key)
