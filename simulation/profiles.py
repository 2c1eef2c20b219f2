"""What one training iteration costs a worker: the gradient's size and the compute before it.

Built-in sizes are the fp32 parameters of the models the InArt paper trains (its "97 MB"
ResNet-50 and "548 MB" VGG-19 are MiB) and of the large LSTM language model of Zaremba et al.
(2014; 2 layers of 1500 units, 10k-word vocabulary: 66,034,000 parameters) and GPT-2 small
(Radford et al. 2019; 12 layers of 768, tied embeddings: Hugging Face's GPT2Model has
124,439,808 parameters); their compute time
is 0 unless given (``--compute-ms``), because it depends on the accelerator.  A profile JSON
carries both, e.g. from a measured ``inart train`` run:
``{"name": "mlp", "model_bytes": 407080, "compute_s": 0.012}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FP32 = 4


@dataclass(frozen=True)
class Profile:
    """A model's gradient size in bytes and its compute time per iteration in seconds."""

    name: str
    model_bytes: int
    compute_s: float = 0.0


BUILTIN: dict[str, Profile] = {
    "resnet50": Profile("resnet50", 25_557_032 * FP32),  # torchvision resnet50: 97.5 MiB
    "vgg19": Profile("vgg19", 143_667_240 * FP32),  # torchvision vgg19: 548.0 MiB
    "lstm": Profile("lstm", 66_034_000 * FP32),  # Zaremba et al. large LSTM: 251.9 MiB
    "gpt2-small": Profile("gpt2-small", 124_439_808 * FP32),  # GPT-2 small: 474.7 MiB
}


class ProfileError(ValueError):
    """A --model value or profile file that cannot be used; the message names the field."""


def load_profile(spec: str, compute_s: float | None = None) -> Profile:
    """``resnet50 | vgg19 | lstm | gpt2-small | synthetic:BYTES | PROFILE.json``;
    ``compute_s`` overrides."""
    if spec in BUILTIN:
        prof = BUILTIN[spec]
    elif spec.startswith("synthetic:"):
        text = spec.partition(":")[2]
        try:
            size = int(float(text))
        except ValueError:
            size = 0
        if size <= 0:
            raise ProfileError(f"--model {spec!r}: expected synthetic:BYTES with BYTES > 0")
        prof = Profile(spec, size)
    elif Path(spec).is_file():
        prof = _from_file(Path(spec))
    else:
        raise ProfileError(f"--model {spec!r}: expected one of {', '.join(BUILTIN)}, "
                           "synthetic:BYTES or an existing profile JSON file")
    if compute_s is not None:
        if not compute_s >= 0:
            raise ProfileError(f"compute time {compute_s!r} s: expected >= 0")
        prof = Profile(prof.name, prof.model_bytes, compute_s)
    return prof


def _from_file(path: Path) -> Profile:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfileError(f"profile {path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ProfileError(f"profile {path}: expected a JSON object")
    size = data.get("model_bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ProfileError(f"profile {path} 'model_bytes'={size!r}: expected an integer > 0")
    compute = data.get("compute_s", 0.0)
    if isinstance(compute, bool) or not isinstance(compute, int | float) or not compute >= 0:
        raise ProfileError(f"profile {path} 'compute_s'={compute!r}: expected a number >= 0")
    return Profile(str(data.get("name", path.stem)), size, float(compute))
