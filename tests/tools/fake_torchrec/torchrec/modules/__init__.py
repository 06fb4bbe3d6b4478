"""torchrec.modules of the test double."""
