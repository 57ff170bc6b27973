import math

import numpy as np
import pytest

from fedenv.traces.schema import ALWAYS_ONLINE, Availability


def test_availability_follows_fedscales_rule_by_hand():
    # period 10 s, online in [2, 4] and [6, 7] (s mod 10)
    pattern = Availability(10.0, np.array([[2.0, 4.0], [6.0, 7.0]]))
    assert pattern.is_online(3.0) and pattern.is_online(13.0) and pattern.is_online(7.0)
    assert not pattern.is_online(5.0) and not pattern.is_online(9.5)
    assert pattern.wait_s(5.0) == pytest.approx(1.0)  # next start 6
    assert pattern.wait_s(8.0) == pytest.approx(4.0)  # wraps to 2 of the next period: 10 - 8 + 2
    assert pattern.wait_s(13.0) == 0.0
    assert pattern.online_fraction() == pytest.approx(0.3)  # (2 + 1) / 10


def test_never_online_waits_forever_and_always_online_never_waits():
    never = Availability(10.0, np.zeros((0, 2)))
    assert not never.is_online(0.0) and math.isinf(never.wait_s(3.0)) and never.online_fraction() == 0.0
    assert all(ALWAYS_ONLINE.wait_s(t) == 0.0 for t in (0.0, 0.5, 123.25)) and ALWAYS_ONLINE.online_fraction() == 1.0
