    actor_rollout_ref.actor.megatron.tensor_model_parallel_size="12000 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="false \  
    actor_rollout_ref.actor.megatron.context_parallel_size="򎝴°l򬤽oÄ4Q򣶝Å \
    ++trainer.total_epochs="{a: 1} \
run
srun --nodes=1 python3 -m verl.trainer.main_ppo --config-name='ppo_megatron_trainer.yaml' \
    ++actor_rollout_ref.rollout.gpu_memory_utilization=D񋺜r¦ØW \  
    'actor_rollout_ref.actor.megatron.context_parallel_size=inf' \  
    actor_rollout_ref.actor.megatron.optimizer_offload="$((MICRO * 2 + 100000000000000000000)) \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size="$N > out.log