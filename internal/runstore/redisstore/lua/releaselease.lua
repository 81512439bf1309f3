-- releaselease: ARGV 1 token. Drops the lease only if it is still this holder's.
release_if_mine(ARGV[1])
return {'OK'}
