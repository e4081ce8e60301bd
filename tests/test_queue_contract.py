"""The queue contract (tests/queue_contract.py) fails on each kind of break it checks: a reordered, lost or early
entry, a refusal with room, a write past the limit, an entry held back too long or let out before it may leave."""

import pytest

from .queue_contract import QueueContract

IDLE = dict(w_ready=True, w_valid=False, w_data=0, r_valid=False, r_ready=False, r_data=0)


def _run(contract, clocks):
    for clock in clocks:
        contract.clock(**{**IDLE, **clock})


def test_a_good_queue_passes():
    contract = QueueContract(capacity=2, min_latency=1, max_latency=1)
    _run(contract, [dict(w_valid=True, w_data=1), dict(w_valid=True, w_data=2, r_valid=True, r_data=1, r_ready=True),
                    dict(r_valid=True, r_data=2, r_ready=True), {}])
    assert (contract.writes, contract.reads) == (2, 2)


@pytest.mark.parametrize("clocks, message", [
    ([dict(w_valid=True, w_data=1), dict(w_valid=True, w_data=2), dict(w_ready=False, r_valid=True, r_data=2)],
     "oldest"),
    ([dict(r_valid=True, r_data=7)], "empty"),
    ([dict(w_valid=True, w_data=1, r_valid=True, r_data=1)], "before"),
    ([dict(w_ready=False)], "room"),
    ([dict(w_valid=True, w_data=1), dict(w_valid=True, w_data=2), dict(w_valid=True, w_data=3)], "limit"),
    ([dict(w_valid=True, w_data=1), {}, {}, {}], "not offered"),
])
def test_each_break_fails(clocks, message):
    with pytest.raises(AssertionError, match=message):
        _run(QueueContract(capacity=2, min_latency=1, max_latency=1), clocks)


def test_an_entry_that_may_not_leave():
    contract = QueueContract(capacity=4, releasable=lambda held: held[-1][0] == 0)
    with pytest.raises(AssertionError, match="may not leave"):
        _run(contract, [dict(w_valid=True, w_data=5), dict(r_valid=True, r_data=5)])
