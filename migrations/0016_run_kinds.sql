-- 0016: the log learns three run kinds (docs/architecture.md §8).
--
-- compare:  one question answered as of two Stichtage, with the difference between the
--           two cited answers.
-- evidence: the sentences the gates would let an answer rest on, handed to an assistant
--           that writes the answer with its own model.
-- check:    an answer written elsewhere, held sentence by sentence to the same gates.
--
-- They are declared together, before the code that writes them, so that the changes
-- building them do not each rewrite this constraint.
ALTER TABLE runs DROP CONSTRAINT runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
    CHECK (kind IN ('search', 'answer', 'review_sample', 'review_verdict', 'erasure',
                    'compare', 'evidence', 'check'));
