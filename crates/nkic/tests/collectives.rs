//! `nki.collectives` over the two cores of an LNC=2 launch (issue 13):
//! `all_gather` and `all_reduce` over the group `[[0, 1]]` exchange the
//! cores' tiles and compute the real result
//! (`collectives/all_gather_lnc2.py`), as do `reduce_scatter`,
//! `all_to_all` and the ring permute `collective_permute_implicit`
//! (`collectives/exchange_lnc2.py`). Collectives into shared HBM whose
//! other ranks are replicas are written once, by core 0, with a core
//! barrier after (`collectives/reduce_hbm_lnc2.py`): no race, and the
//! replicas' result.

mod common;

#[test]
fn all_gather_and_all_reduce_over_the_two_cores() {
    // x[r, c] = 32 r + c.
    let (x, [gathered, summed]) = common::run_on_positions(
        "collectives",
        "crates/nkic/tests/collectives/all_gather_lnc2.py",
        "x",
        [128, 32],
    );
    for r in 0..128 {
        let row = r % 64;
        for c in 0..64 {
            // Core 0's tile (rows 0..64 of x) first, then core 1's.
            let want = if c < 32 {
                x[row * 32 + c]
            } else {
                x[(row + 64) * 32 + c - 32]
            };
            assert_eq!(gathered[r * 64 + c], want, "gathered[{r}, {c}]");
        }
        for c in 0..32 {
            let want = x[row * 32 + c] + x[(row + 64) * 32 + c];
            assert_eq!(summed[r * 32 + c], want, "summed[{r}, {c}]");
        }
    }
}

#[test]
fn reduce_scatter_all_to_all_and_permute_over_the_two_cores() {
    // x[r, c] = 32 r + c.
    let (x, [scattered, exchanged, permuted]) = common::run_on_positions(
        "collectives_exchange",
        "crates/nkic/tests/collectives/exchange_lnc2.py",
        "x",
        [128, 32],
    );
    for r in 0..128 {
        let (core, row) = (r / 64, r % 64);
        // Row `row` of core `k`'s tile.
        let tile = |k: usize, col: usize| x[(64 * k + row) * 32 + col];
        for j in 0..16 {
            let col = 16 * core + j;
            assert_eq!(
                scattered[r * 16 + j],
                tile(0, col) + tile(1, col),
                "scattered[{r}, {j}]"
            );
        }
        for col in 0..32 {
            // Chunk `k` of this core's result is core `k`'s chunk `core`.
            let from = col / 16;
            let want = tile(from, 16 * core + col % 16);
            assert_eq!(exchanged[r * 32 + col], want, "exchanged[{r}, {col}]");
            assert_eq!(
                permuted[r * 32 + col],
                tile(1 - core, col),
                "permuted[{r}, {col}]"
            );
        }
    }
}

#[test]
fn collectives_into_shared_hbm_are_written_once_without_a_race() {
    // x[r, c] = 32 r + c; four ranks, the other three replicas of this one.
    let (x, [summed, scattered, gathered]) = common::run_on_positions(
        "collectives_hbm",
        "crates/nkic/tests/collectives/reduce_hbm_lnc2.py",
        "x",
        [128, 32],
    );
    let four_x: Vec<f32> = x.iter().map(|v| 4.0 * v).collect();
    assert_eq!(summed, four_x);
    assert_eq!(scattered, four_x[..32 * 32]);
    // Two copies of core 0's rows (rows 0..64 of x), not a race with core
    // 1's rows.
    assert_eq!(gathered, [&x[..64 * 32], &x[..64 * 32]].concat());
}
