"""Place and route the RGMII MAC alone on a board with Ethernet (three nextpnr seeds) and write
build/reports/mac_pnr-<board>.json: the post-route Fmax of the receive, transmit and user clock domains."""

import argparse
import json
import sys

from apbbf.flows.args import BUILD, REPORTS, add_seeds
from apbbf.flows.mac_pnr import mac_pnr
from apbbf.hdl.eth.loopback import BOARD_PHYS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--board", choices=sorted(BOARD_PHYS), default="colorlight-5a75b")
    add_seeds(parser)
    parser.add_argument("--data-width", type=int, default=64)
    parser.add_argument("--top", choices=["loopback", "appliance"], default="loopback",
                        help="the MAC alone (default), or the appliance top with a small filter")
    args = parser.parse_args(argv)
    name = args.board if args.top == "loopback" else f"{args.board}-appliance"
    result = mac_pnr(args.board, BUILD / "mac-pnr" / name, seeds=args.seeds, data_width=args.data_width,
                     top=args.top)
    out = REPORTS / f"mac_pnr-{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['board']} ({result['device']}), {result['data_width']}-bit beats")
    for name, d in result["domains"].items():
        print(f"  {name:28s} {d['fmax_mhz']:7.1f} MHz (seeds {d['fmax_min_mhz']}..{d['fmax_max_mhz']}) "
              f"against {d['constraint_mhz']} MHz: {'met' if d['met_every_seed'] else 'NOT met'}")
    used = ", ".join(f"{name} {v['used']}/{v['available']}" for name, v in result["utilization"].items())
    print(f"  utilization {used}")
    print(f"  written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
