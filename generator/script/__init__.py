"""From a launch script to the training setup it describes, shared by `gen recipe --from`,
`gen import` and `gen diff`: `extract` picks the trainer call (`trainer_call`) and reads its
setup (`setup_from_config`), `algorithms` says which recipe algorithm a config runs."""
