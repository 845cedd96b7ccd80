"""The reconciler lease: one holder at a time, renewed, taken over once a crashed holder's lease expires."""

import re

import pytest

from inferplane.runtime.lease import Lease, LeaseLost
from inferplane.runtime.store import Store


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_one_lease_holder_at_a_time_and_an_expired_lease_is_taken_over():
    store, clock = Store(None), Clock()
    first, second = Lease(store, clock=clock), Lease(store, clock=clock)
    assert first.try_acquire()
    assert not second.try_acquire()
    assert second.current_holder() == first.holder
    clock.now += 10
    first.renew_if_due()  # renewed at 1010: lasts until 1025
    clock.now += 14
    assert not second.try_acquire()
    clock.now += 2  # first stopped renewing (it crashed): the lease expired at 1025
    assert second.current_holder() is None
    assert second.try_acquire()
    with pytest.raises(LeaseLost, match=re.escape(f"the reconciler lease was taken by {second.holder}")):
        first.renew_if_due()
    first.release()  # releasing what another holds leaves it alone
    assert second.current_holder() == second.holder
    second.release()
    assert first.try_acquire()
