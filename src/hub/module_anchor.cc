// Anchor for the hark_hub library until its sources land.
