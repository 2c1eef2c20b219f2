"""Failure drills on a fig1 emulation under `inart serve` (`inart drill`, `inart bench drill`)."""
