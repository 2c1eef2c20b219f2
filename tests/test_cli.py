import subprocess
import sys

from control_plane import cli


def test_every_registered_module_has_register():
    for name, (module, _) in cli.COMMANDS.items():
        assert callable(cli.load_register(module)), name


def test_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "control_plane.cli", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for name in cli.COMMANDS:
        assert name in out


def test_unknown_command_fails_cleanly():
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "nope"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
