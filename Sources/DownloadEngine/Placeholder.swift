// Placeholder until the DownloadEngine module lands.
