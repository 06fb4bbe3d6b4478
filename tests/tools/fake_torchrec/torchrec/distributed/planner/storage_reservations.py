"""The storage reservations of the test double: the share of HBM (and the dense tensors'
bytes) the planner keeps off the tables."""


class FixedPercentageStorageReservation:
    def __init__(self, percentage):
        if not 0 <= percentage <= 1:
            raise ValueError("fake FixedPercentageStorageReservation: percentage %r" % percentage)
        self._percentage = percentage
        self._dense_tensor_estimate = None


class HeuristicalStorageReservation:
    def __init__(self, percentage, parameter_multiplier=6.0, dense_tensor_estimate=None):
        if not 0 <= percentage <= 1:
            raise ValueError("fake HeuristicalStorageReservation: percentage %r" % percentage)
        self._percentage = percentage
        self._dense_tensor_estimate = dense_tensor_estimate
