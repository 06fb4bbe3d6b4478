"""A test double of TorchRec for pipelines/torchrec_planner.py (tests/torchrec-planner.bats):
only the names the script uses, with a simple deterministic planner of our own. Not TorchRec;
see ../README.md for its rules."""
__version__ = "0.0.0+fake"
