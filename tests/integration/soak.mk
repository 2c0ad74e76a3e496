# soak: issue 8 (reliability); see the scripts it lists.
