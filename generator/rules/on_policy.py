"""VX917 — a strictly on-policy step (one mini batch, one epoch) whose old log-probs are computed in
micro batches of another size than the update's: the two forward passes differ numerically, the
ratio is not exactly 1, and pg_clipfrac / ppo_kl are non-zero (verl#6280). verl 0.6.0–0.7.1's FSDP
actor sidesteps it (on-policy: old_log_prob = log_prob.detach(), verl/workers/actor/dp_actor.py:478
@ v0.7.0); the Megatron actor, the new engine's workers, and FSDP before 0.6.0 and from 0.8.0 do not."""

from __future__ import annotations

from collections.abc import Iterator

from generator.config.reader import ConfigReader
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, ctx_finding, rule
from generator.verl.constants import ACTOR, ROLLOUT
from generator.verl.versions import parse

_SHORTCUT = ((0, 6, 0), (0, 7, 1))  # releases whose legacy FSDP actor reuses log_prob when on-policy


def _takes_shortcut(view: ConfigReader) -> bool:
    if view.backend == "megatron" or view.new_engine:
        return False
    try:
        release = parse(view.version)[:3]
    except Exception:
        return False
    return _SHORTCUT[0] <= release <= _SHORTCUT[1]


# Info, not a warning (issue 34): verl neither fails nor warns on it and the run does what the script says; the
# difference is numerical advice about clip statistics, never a broken run.
@rule("VX917", "on-policy-log-prob-micro-differs", severity="info", stage="silent", verl_ref="",
      backends=("megatron", "fsdp"))
def on_policy_micro_differs(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    train, mini, epochs = view.int("data.train_batch_size"), view.int(ACTOR + "ppo_mini_batch_size"), \
        view.int(ACTOR + "ppo_epochs")
    if train is None or mini is None or epochs is None or mini != train or epochs != 1:
        return
    if view.is_set("data.gen_batch_size") and view.int("data.gen_batch_size") != train:
        return  # a filtered step (DAPO): the update's batch is not the generated one
    if _takes_shortcut(view):
        return
    actor_dynamic, lp_dynamic = view.bool(ACTOR + "use_dynamic_bsz"), view.bool(ROLLOUT + "log_prob_use_dynamic_bsz")
    if actor_dynamic is None or lp_dynamic is None:
        return
    if actor_dynamic and lp_dynamic:
        actor_key, lp_key = ACTOR + "ppo_max_token_len_per_gpu", ROLLOUT + "log_prob_max_token_len_per_gpu"
        unit = "token budgets"
    elif not actor_dynamic and not lp_dynamic:
        actor_key, lp_key = ACTOR + "ppo_micro_batch_size_per_gpu", ROLLOUT + "log_prob_micro_batch_size_per_gpu"
        unit = "micro batches"
    else:
        actor_key, lp_key, unit = "", "", "mixed"
    if unit == "mixed":
        which = "the update" if actor_dynamic else "the log-prob pass"
        message = (f"strictly on-policy (ppo_mini_batch_size = data.train_batch_size = {train}, ppo_epochs 1), "
                   f"but only {which} uses dynamic batches: the old log-probs and the update's log-probs come "
                   f"from differently packed forward passes, so the ratio is not exactly 1 and pg_clipfrac and "
                   f"ppo_kl are non-zero (verl#6280); use the same batching for both")
        yield ctx_finding(on_policy_micro_differs, view, (ROLLOUT + "log_prob_use_dynamic_bsz",), message)
        return
    actor_value, lp_value = view.int(actor_key), view.int(lp_key)
    if actor_value is None or lp_value is None or actor_value == lp_value:
        return
    message = (f"strictly on-policy (ppo_mini_batch_size = data.train_batch_size = {train}, ppo_epochs 1), but the "
               f"old log-probs use {unit} of {lp_value} ({lp_key.rsplit('.', 1)[-1]}) and the update {actor_value} "
               f"({actor_key.rsplit('.', 1)[-1]}): the two forward passes differ numerically, so the ratio is not "
               f"exactly 1 and pg_clipfrac and ppo_kl are non-zero — clipping acts on noise (verl#6280); set "
               f"{lp_key.rsplit('.', 1)[-1]}={actor_value}")
    fix = Fix(f"set {lp_key}={actor_value}", (KeyEdit(lp_key, view.raw(lp_key), actor_value),), applicability="safe")
    yield ctx_finding(on_policy_micro_differs, view, (lp_key,), message, fix=fix)
