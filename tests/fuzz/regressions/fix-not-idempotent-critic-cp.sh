#!/usr/bin/env bash
python3 main.py \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size="12000 \
    ++actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity="24" \
    'actor_rollout_ref.actor.use_dynamic_bsz=-0.0' \  
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="false \  
    $ARGS $@
export MODEL_PATH=TRUE
run() {
torchrun --nproc_per_node=8 -m verl.trainer.main_ppo --config-name='ppo_megatron_trainer.yaml' \
    +actor_rollout_ref.rollout.name='it'\''s' \
    +actor_rollout_ref.rollout.mode=$N \
    actor_rollout_ref.actor.megatron.context_parallel_size="򎝴°l򬤽oÄ4Q򣶝Å \
    'data.val_files=[1,[2,[3]]]' \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$BS \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size='$HOME/data/gsm8k/train.parquet' \
    +actor_rollout_ref.actor.megatron.optimizer_offload=\ \
    +critic.ppo_micro_batch_size_per_gpu='𮤚Ù񙣉Åk' \
    critic.ppo_micro_batch_size_per_gpu='console' \
    data.truncation=left \
    ++trainer.total_epochs="{a: 1} \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity="yes" \
    "$@" 2>&1 | tee log.txt
}
run
srun --nodes=1 python3 -m verl.trainer.main_ppo --config-name='ppo_megatron_trainer.yaml' \
    actor_rollout_ref.actor.ppo_micro_batch_size=8 \
    algorithm.use_kl_in_reward="`hostname`" \
    ++actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="$BS" \
    actor_rollout_ref.actor.kl_loss_coef=$((MICRO * 24 + 256)) \
    '++data.max_response_length="$N' \
    ~critic.ppo_micro_batch_size_per_gpu \
    ++actor_rollout_ref.rollout.gpu_memory_utilization=D񋺜r¦ØW \  
    'actor_rollout_ref.actor.megatron.context_parallel_size=inf' \  
    actor_rollout_ref.actor.megatron.optimizer_offload="$((MICRO * 2 + 100000000000000000000)) \
    +actor_rollout_ref.model.use_fused_kernels='3' \
    ~actor_rollout_ref.actor.ppo_mini_batch_sise \
    'actor_rollout_ref.model.enable_gradient_checkpointing="-0.0"' \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size="$N > out.log
run() {
python3 -m verl.trainer.main_generation --config-path=config \
    +trainer.save_freq=['console','wandb'] \
    +data.train_files='64' \
    ~actor_rollout_ref.actor.ppo_mini_batch_size \
    'no.such.key='\''$((MODEL_PATH * 16 + 4))'\''' \
    ~actor_rollout_ref.rollout.tensor_model_parallel_size \
    ~actor_rollout_ref.actor.ppo_mini_batch_size \
    ++actor_rollout_ref.actor.use_dynamic_bsz="\" \
    trainer.nnodes=㐌򲧚1 \
    ~actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu
    # a comment inside the continued command \
    ++actor_rollout_ref.actor.ppo_mini_batch_size=nan \
    actor_rollout_ref.actor.ppo_mini_batch_sise="$(touch /tmp/verl_gen_fuzz_marker)" \
    ++actor_rollout_ref.actor.megatron.expert_model_parallel_size=deepseek-ai/DeepSeek-V3 \
    ++actor_rollout_ref.rollout.gpu_memory_utilization=inf \
    ++actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="true" \
    $ARGS \
}
run
run() {
python3 -m recipe.dapo.main_dapo \
    +actor_rollout_ref.actor.ppo_micro_batch_size="100000000000000000000
    # a comment inside the continued command \
    data.val_files=True \
    ~actor_rollout_ref.actor.megatron.context_parallel_size
    # a comment inside the continued command \
    +actor_rollout_ref.model.path="$NNODES" \
    '+data.truncation='\''1e400'\''' \
    ++critic.ppo_micro_batch_size_per_gpu=True
}
run
run() {
python3 -m verl.trainer.main_generation \
    '+actor_rollout_ref.rollout.n=1' \
    +critic.ppo_micro_batch_size_per_gpu="-0.0 \
    ~trainer.total_epochs \
    ++actor_rollout_ref.actor.megatron.context_parallel_size="${NNODES%.*}" \
    actor_rollout_ref.actor.optim.lr="${x}" \
    data.val_files=async \
    ++algorithm.use_kl_in_reward="${MICRO:-256} > out.log
}
run
if [ "$ARGS" = "🙂" ]; then
ray job submit --address="$RAY_ADDRESS" -- python3 -m verl.trainer.main_ppo \
    'actor_rollout_ref.actor.ppo_micro_batch_size="inf' \
    ++actor_rollout_ref.actor.ppo_micro_batch_size=`hostname` \
    actor_rollout_ref.actor.megatron.context_parallel_size="$N \
    actor_rollout_ref.model.enable_gradient_checkpointing="True" \
    +actor_rollout_ref.actor.megatron.param_offload="񓙨B񑈶é򕱨~" \
    +actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu="&î«򞑛Nû퓍" \
    actor_rollout_ref.actor.use_dynamic_bsz='False' \
    +actor_rollout_ref.actor.megatron.expert_model_parallel_size='$MODEL_PATH' \
    actor_rollout_ref.actor.megatron.expert_model_parallel_size='['\''a'\'',' \
    '+no.such.key=${ARGS:1:2}' \
    ~actor_rollout_ref.actor.megatron.pipeline_model_parallel_size \
    actor_rollout_ref.actor.use_dynamic_bsz='$((BS * 16 + 3))' \
    actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity="5" \
    ~critic.megatron.tensor_model_parallel_size \
    "$@" > out.log
else
  x="$ARGS"
fi
