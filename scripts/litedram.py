#!/usr/bin/env python3
"""Generate the boards' LiteDRAM cores into ``build/litedram/<target>/`` (``make litedram``;
:mod:`apbbf.flows.litedram`)."""

import argparse


def main(argv=None) -> int:
    from apbbf.flows.litedram import TARGETS, generate
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", default=list(TARGETS), help=f"targets (default all: {', '.join(TARGETS)})")
    parser.add_argument("--force", action="store_true", help="generate even if an identical core exists")
    args = parser.parse_args(argv)
    for target in args.targets:
        core = generate(target, force=args.force)
        s = core.settings
        print(f"{target}: {core.verilog} ({s['module']}, {s['phy']}, {s['sys_clk_freq'] / 1e6:g} MHz, CL {s.get('cl', '-')}, "
              f"tREFI {s['timing_cycles']['tREFI']} cycles)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
