"""`gen diff`: two launches as the configs verl would see."""
