"""NVIDIA's CUDA container image for each CUDA minor version (cuda_images.yaml, each row with its source)."""

from functools import cache
from typing import NamedTuple

from fleetgen.compat.shipped import rows, shipped_data
from fleetgen.model.types import Version


class CudaImage(NamedTuple):
    cuda: Version
    image: str
    source: str
    url: str
    provisional: str = ""


class CudaImages(NamedTuple):
    images: tuple[CudaImage, ...]


@cache
def cuda_images() -> CudaImages:
    return CudaImages(rows(CudaImage, shipped_data("cuda_images.yaml")["images"]))


def cuda_image(cuda: Version) -> CudaImage | None:
    """The image of `cuda`'s minor version (12.4 and 12.4.1 both find the 12.4 row)."""
    return next((row for row in cuda_images().images if row.cuda.minor == cuda.minor), None)
