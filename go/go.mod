module ferrotorch

go 1.19
