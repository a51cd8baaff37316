"""TD3 and SAC end each fingerprint case (tests/fingerprints.py) as recorded before the
learners' critic recipes became parts: bit for bit on the processor the record was made
on, the state's sum to 1e-4 elsewhere (XLA's CPU kernels may round differently there)."""

import json

import fingerprints
import pytest

RECORD = json.loads(fingerprints.RECORD.read_text())
HERE = fingerprints.processor()
CASES = {policy: dict(fingerprints.cases(policy)) for policy in fingerprints.LEARNERS}


def test_every_case_is_recorded_and_every_record_is_a_case():
    names = {f"{policy} {name}" for policy, cases in CASES.items() for name in cases}
    assert names == set(RECORD["cases"])


@pytest.mark.parametrize("case", sorted(RECORD["cases"]))
def test_the_learner_ends_as_recorded(case):
    policy, name = case.split(" ", 1)
    found = fingerprints.run(policy, CASES[policy][name])
    recorded = RECORD["cases"][case]
    if recorded.get("processor", RECORD["processor"]) == HERE:
        assert found["sha256"] == recorded["sha256"], f"{case} changed bits"
    else:
        assert found["sum"] == pytest.approx(recorded["sum"], rel=1e-4), case
