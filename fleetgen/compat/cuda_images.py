"""NVIDIA's CUDA container image for each CUDA minor version (cuda_images.yaml, each row with its source)."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from fleetgen.model.spec import Spec
from fleetgen.model.types import Version


class CudaImage(Spec):
    cuda: Version
    image: str
    source: str
    url: str
    provisional: str = ""


class CudaImages(Spec):
    images: tuple[CudaImage, ...]


@cache
def cuda_images() -> CudaImages:
    text = (resources.files("fleetgen.compat") / "cuda_images.yaml").read_text(encoding="utf-8")
    return CudaImages.model_validate(yaml.load(text, Loader=yaml.CSafeLoader))


def cuda_image(cuda: Version) -> CudaImage | None:
    """The image of `cuda`'s minor version (12.4 and 12.4.1 both find the 12.4 row)."""
    return next((row for row in cuda_images().images if row.cuda.minor == cuda.minor), None)
