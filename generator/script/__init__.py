"""From a launch script to the training setup it describes, shared by `gen recipe --from`,
`gen import` and `gen diff`: `extract` picks the trainer call and reads its setup,
`algorithms` says which recipe algorithm a config runs."""
