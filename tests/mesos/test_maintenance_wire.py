"""Maintenance on the wire, as real Mesos 1.12 sent it (tests/data/mesos-traces/16-...jsonl): an
offer's and an inverse offer's ``unavailability`` parsed into the core's plain Window, and the
adapter turning INVERSE_OFFERS / RESCIND_INVERSE_OFFER into the shell's events and the core's
accept into ACCEPT_INVERSE_OFFERS."""
from __future__ import annotations

import json
from pathlib import Path

from tfmesos.mesos.driver import MesosAdapter
from tfmesos.mesos.offers import parse_inverse_offer, parse_offer

TRACE = Path(__file__).resolve().parents[1] / "data" / "mesos-traces" / "16-maintenance-inverse-offers.jsonl"
START_NS = 1_800_000_000_000_000_000


def _events(kind: str) -> list[dict]:
    found = []
    for line in TRACE.read_text().splitlines():
        entry = json.loads(line.replace('"<START_NS_1>"', f'"{START_NS}"'))
        if entry.get("dir") == "event" and (entry.get("body") or {}).get("type") == kind:
            found.append(entry["body"])
    return found


def test_an_offer_of_a_scheduled_machine_carries_its_window():
    raw = next(o for e in _events("OFFERS") for o in e["offers"]["offers"] if "unavailability" in o
               and o["unavailability"]["start"]["nanoseconds"] == str(START_NS))
    window = parse_offer(raw).unavailability
    assert window is not None and (window.start, window.duration) == (START_NS / 1e9, 3600.0)


def test_an_inverse_offer_names_its_agent_machine_and_window():
    raw = _events("INVERSE_OFFERS")[0]["inverse_offers"]["inverse_offers"][0]
    parsed = parse_inverse_offer(raw)
    assert parsed is not None
    assert (parsed.id, parsed.agent_id, parsed.hostname) == ("<OFFER_ID_6>", "<AGENT_ID_1>", "127.0.0.2")
    assert (parsed.window.start, parsed.window.duration) == (START_NS / 1e9, 3600.0)
    assert parse_inverse_offer({**raw, "unavailability": {}}) is None


class Shell:
    def __init__(self) -> None:
        self.seen: list = []

    def inverse_offers(self, offers):
        self.seen.append(("inverse", offers))

    def inverse_offer_rescinded(self, inverse_offer_id):
        self.seen.append(("rescinded", inverse_offer_id))


class Driver:
    def __init__(self) -> None:
        self.calls: list = []

    def acceptInverseOffers(self, ids, filters=None):  # noqa: N802 - the driver's name
        self.calls.append(("accept", ids))


def test_the_adapter_turns_inverse_offers_into_events_and_accepts_them():
    shell, driver = Shell(), Driver()
    adapter = MesosAdapter(shell)
    adapter.driver = driver
    adapter.inverseOffers(driver, _events("INVERSE_OFFERS")[0]["inverse_offers"]["inverse_offers"])
    adapter.inverseOfferRescinded(driver, {"value": "<OFFER_ID_8>"})
    (kind, offers), rescinded = shell.seen
    assert kind == "inverse" and [o.id for o in offers] == ["<OFFER_ID_6>"]
    assert rescinded == ("rescinded", "<OFFER_ID_8>")
    adapter.accept_inverse_offers(["<OFFER_ID_6>"])
    assert driver.calls == [("accept", [{"value": "<OFFER_ID_6>"}])]
