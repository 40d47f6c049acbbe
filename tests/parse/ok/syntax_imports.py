import nki
import nki.language
import nki.language as nl
import nki.isa as nisa, numpy as np
import a.b.c.d as deep, os
from nki import isa
from nki import language as nl2, isa as nisa2
from nki.language import (
    ndarray,
    float32 as f32,
    bfloat16,
)
from . import sibling
from .helpers import (tile_count as tc, copy_tile)
from .. import parent_mod
from ..pkg.sub import thing
from ...top import very_far as far
from math import *
