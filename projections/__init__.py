"""The read side: pure folds over the event log and one runner that catches them up or replays them."""
