"""torchrec.optim of the test double: the optimizer classes the script names (markers only)."""
import torch


class Adagrad(torch.optim.Optimizer):
    pass


class RowWiseAdagrad(torch.optim.Optimizer):
    pass
