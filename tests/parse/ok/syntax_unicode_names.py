α = 0.5
β_scale = α * 2.0
Δt = 1e-3
größe = 128
naïve_sum = sum(x for x in values)
名前 = "タイル"


def σ(x, τ=1.0):
    return 1.0 / (1.0 + exp(-x / τ))


class Ωmega:
    ζ: int = 0
