"""Reference networks written as torch modules with seeded weights and batch-norm statistics
(torchvision is not installable here): ResNet-18 (:mod:`compiler.zoo.resnet`), a small CNN
trained on scikit-learn's bundled digits (:mod:`compiler.zoo.digits`) and MobileNet-style
depthwise blocks (:mod:`compiler.zoo.mobilenet`). The demo, the benchmarks and the tests compile
them; importing the package needs torch (the ``model`` extra)."""

from compiler.zoo.seeded import seeded

__all__ = ["seeded"]
