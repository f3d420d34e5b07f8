//! RFC 6962 Merkle trees over audit record hashes: roots for checkpoints and consistency proofs
//! showing that a later log extends an earlier one.
//!
//! Leaf hash: `SHA-256(0x00 ‖ record hash)`. Interior node: `SHA-256(0x01 ‖ left ‖ right)`. The
//! empty tree's root is `SHA-256("")`. A tree of `n > 1` leaves splits at the largest power of two
//! smaller than `n` (RFC 6962 §2.1). Proof generation and verification follow RFC 9162 §2.1.4.

use crate::Digest;

/// The hash of a leaf whose data is `record_hash`.
pub fn leaf_hash(record_hash: &Digest) -> Digest {
    Digest::of_parts(&[&[0x00], &record_hash.0])
}

fn node_hash(left: &Digest, right: &Digest) -> Digest {
    Digest::of_parts(&[&[0x01], &left.0, &right.0])
}

/// Computes a tree's root one leaf at a time in O(log n) memory.
#[derive(Debug, Clone, Default)]
pub struct RootBuilder {
    /// Roots of perfect subtrees, largest first, with their leaf counts.
    stack: Vec<(u64, Digest)>,
    count: u64,
}

impl RootBuilder {
    /// Adds the next leaf (its record hash, not yet leaf-hashed).
    pub fn push(&mut self, record_hash: &Digest) {
        let mut node = (1u64, leaf_hash(record_hash));
        while let Some(&(size, left)) = self.stack.last() {
            if size != node.0 {
                break;
            }
            self.stack.pop();
            node = (size * 2, node_hash(&left, &node.1));
        }
        self.stack.push(node);
        self.count += 1;
    }

    /// Leaves added so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The root of the tree of every leaf added so far.
    pub fn root(&self) -> Digest {
        let mut iter = self.stack.iter().rev();
        let Some(&(_, mut acc)) = iter.next() else {
            return Digest::of(b"");
        };
        for (_, left) in iter {
            acc = node_hash(left, &acc);
        }
        acc
    }
}

/// The root of the tree over `record_hashes`.
pub fn root(record_hashes: &[Digest]) -> Digest {
    let mut builder = RootBuilder::default();
    for hash in record_hashes {
        builder.push(hash);
    }
    builder.root()
}

fn split(n: usize) -> usize {
    // Largest power of two strictly less than n (n >= 2).
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// The consistency proof that the first `m` leaves are a prefix of all of `record_hashes`
/// (RFC 6962 §2.1.2 `PROOF(m, D[n])`). Empty when `m` is 0 or equals `n`.
pub fn consistency_proof(m: usize, record_hashes: &[Digest]) -> Vec<Digest> {
    let mut proof = Vec::new();
    if m > 0 && m < record_hashes.len() {
        subproof(m, record_hashes, true, &mut proof);
    }
    proof
}

fn subproof(m: usize, leaves: &[Digest], whole: bool, proof: &mut Vec<Digest>) {
    let n = leaves.len();
    if m == n {
        if !whole {
            proof.push(root(leaves));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &leaves[..k], whole, proof);
        proof.push(root(&leaves[k..]));
    } else {
        subproof(m - k, &leaves[k..], false, proof);
        proof.push(root(&leaves[..k]));
    }
}

/// Checks a consistency proof between a tree of `m` leaves with root `old_root` and a tree of
/// `n` leaves with root `new_root` (RFC 9162 §2.1.4.2).
pub fn verify_consistency(
    m: u64,
    n: u64,
    old_root: &Digest,
    new_root: &Digest,
    proof: &[Digest],
) -> bool {
    if m > n {
        return false;
    }
    if m == n {
        return proof.is_empty() && old_root == new_root;
    }
    if m == 0 {
        return proof.is_empty();
    }
    if proof.is_empty() {
        return false;
    }
    let mut path: Vec<Digest> = proof.to_vec();
    if m.is_power_of_two() {
        path.insert(0, *old_root);
    }
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let (mut fnode, mut snode) = (m - 1, n - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    fr == *old_root && sr == *new_root && snode == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leaves(n: usize) -> Vec<Digest> {
        (0..n).map(|i| Digest::of(&i.to_le_bytes())).collect()
    }

    /// The RFC's recursive definition, written plainly, to check the streaming builder against.
    fn reference_root(leaves: &[Digest]) -> Digest {
        match leaves.len() {
            0 => Digest::of(b""),
            1 => leaf_hash(&leaves[0]),
            n => {
                let k = split(n);
                node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
            }
        }
    }

    #[test]
    fn split_is_the_largest_power_of_two_below_n() {
        assert_eq!([2, 3, 4, 5, 8, 9].map(split), [1, 2, 2, 4, 4, 8]);
    }

    #[test]
    fn two_leaf_root_uses_the_rfc_prefixes() {
        let l = leaves(2);
        let expected = Digest::of_parts(&[
            &[1],
            &Digest::of_parts(&[&[0], &l[0].0]).0,
            &Digest::of_parts(&[&[0], &l[1].0]).0,
        ]);
        assert_eq!(root(&l), expected);
    }

    proptest! {
        #[test]
        fn streaming_root_matches_the_recursive_definition(n in 0usize..300) {
            prop_assert_eq!(root(&leaves(n)), reference_root(&leaves(n)));
        }

        #[test]
        fn consistency_proofs_verify_and_reject_other_roots(n in 1usize..200, m_frac in 0.0f64..=1.0) {
            let all = leaves(n);
            let m = ((n as f64) * m_frac) as usize;
            let proof = consistency_proof(m, &all);
            let (old, new) = (root(&all[..m]), root(&all));
            prop_assert!(verify_consistency(m as u64, n as u64, &old, &new, &proof));
            if m > 0 && m < n {
                let forged = Digest::of(b"forged");
                prop_assert!(!verify_consistency(m as u64, n as u64, &forged, &new, &proof));
                prop_assert!(!verify_consistency(m as u64, n as u64, &old, &forged, &proof));
                // A log whose first m leaves differ does not extend the old tree.
                let mut changed = all.clone();
                changed[m - 1] = Digest::of(b"changed");
                let proof2 = consistency_proof(m, &changed);
                prop_assert!(!verify_consistency(m as u64, n as u64, &old, &root(&changed), &proof2));
            }
        }
    }
}
