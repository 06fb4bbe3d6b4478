"""torchrec.distributed of the test double."""
