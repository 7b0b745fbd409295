//! The Pareto front of points where both coordinates are costs (smaller is better).

/// The indices of the points no other point dominates, sorted by increasing first coordinate
/// (then second). A point dominates another when it is no worse in both coordinates and
/// better in one; equal points are all on the front. Points with a NaN coordinate are never
/// on it. To maximise a coordinate (instances solved), pass its negation.
///
/// ```
/// use tilepdb_solver::bench::pareto::pareto_front;
/// // (memory, nodes): the second point is beaten by the first on both.
/// let points = [(1.0, 10.0), (2.0, 20.0), (3.0, 5.0)];
/// assert_eq!(pareto_front(&points), vec![0, 2]);
/// ```
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let dominates =
        |a: (f64, f64), b: (f64, f64)| a.0 <= b.0 && a.1 <= b.1 && (a.0 < b.0 || a.1 < b.1);
    let mut front: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let p = points[i];
            !p.0.is_nan()
                && !p.1.is_nan()
                && !points
                    .iter()
                    .any(|&q| !q.0.is_nan() && !q.1.is_nan() && dominates(q, p))
        })
        .collect();
    front.sort_by(|&a, &b| {
        let (p, q) = (points[a], points[b]);
        p.0.total_cmp(&q.0).then(p.1.total_cmp(&q.1))
    });
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_made_case() {
        // Memory (MB) against mean nodes, worked by hand:
        //   0 none        (0, 900)   on: nothing uses less memory
        //   1 small       (1, 400)   on
        //   2 small-bad   (1, 500)   off: 1 has the same memory and fewer nodes
        //   3 medium      (5, 400)   off: 1 has less memory and the same nodes
        //   4 large       (50, 20)   on
        //   5 huge-worse  (500, 30)  off: 4 beats it on both
        //   6 huge        (500, 10)  on: fewest nodes
        //   7 twin of 4   (50, 20)   on: equal points do not dominate each other
        //   8 NaN         (NaN, 1)   off
        let points = [
            (0.0, 900.0),
            (1.0, 400.0),
            (1.0, 500.0),
            (5.0, 400.0),
            (50.0, 20.0),
            (500.0, 30.0),
            (500.0, 10.0),
            (50.0, 20.0),
            (f64::NAN, 1.0),
        ];
        assert_eq!(pareto_front(&points), vec![0, 1, 4, 7, 6]);
    }

    #[test]
    fn maximising_by_negation() {
        // (seconds, -solved): the fastest and the one that solves most, and one between.
        let points = [
            (10.0, -20.0),
            (5.0, -25.0),
            (30.0, -25.0),
            (60.0, -25.0),
            (90.0, -24.0),
        ];
        assert_eq!(pareto_front(&points), vec![1]);
        let points = [(1.0, -3.0), (4.0, -9.0), (2.0, -9.0), (3.0, -10.0)];
        assert_eq!(pareto_front(&points), vec![0, 2, 3]);
    }

    #[test]
    fn empty_and_single() {
        assert!(pareto_front(&[]).is_empty());
        assert_eq!(pareto_front(&[(3.0, 4.0)]), vec![0]);
    }
}
